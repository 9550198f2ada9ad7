#!/usr/bin/python3
"""Writes the oracle data of the preprocessing ops' tests (vm/adapters
oracle_test.go): input clips and the outputs numpy and scipy compute from
them. Run it from the checkout root with Debian's python3-numpy and
python3-scipy:

    /usr/bin/python3 testdata/oracle/gen.py

The Go tests read what it writes and never run Python. The references are
written here from their definitions, with numpy's FFT and scipy's windows
and resample_poly, not from genaic's kernels:

- mel spectrogram: centred frames (reflect or constant padding of n_fft//2),
  scipy's periodic Hann window of win_length centred in n_fft, numpy's
  rfft, |X|**power, and the mel filter bank of librosa.filters.mel (Slaney
  or HTK scale, Slaney area normalization or none), in float64;
- mel spectrogram, uncentred (center false): frames of n_fft samples that
  lie within the clip, one every hop_length, nothing padded;
- log: log_base(max(x + offset, floor)), raised to max - dynamic_range;
- Whisper's log-mel, written from the recipe of whisper/audio.py:
  pad_or_trim(audio, N_SAMPLES = 480000), torch.stft(audio, 400, 160,
  window=hann_window(400)) (centred, reflect padding), the last frame
  dropped (stft[..., :-1]), |X|**2, the 80 Slaney bands of
  librosa.filters.mel(sr=16000, n_fft=400, n_mels=80),
  log10(clamp(mel, 1e-10)), raised to its maximum - 8, then (x + 4)/4;
  the features as [frames, bands] (Whisper's [bands, frames] transposed);
- openWakeWord's embedding-model input, written from AudioFeatures'
  _get_melspectrogram and _get_embeddings (openwakeword/utils.py) and the
  torchlibrosa melspectrogram its notebook exports to ONNX: the int16
  samples as floats (x·32768), Spectrogram(n_fft=512, hop_length=160,
  win_length=400, center=False) (a periodic Hann window of 400 centred in
  512, power 2), LogmelFilterBank(sr=16000, n_fft=512, n_mels=32, fmin=60,
  fmax=3800) with its defaults (Slaney bands; power_to_db with ref 1,
  amin 1e-10, top_db 80: 10·log10(max(mel, 1e-10)) raised to its maximum
  - 80), then spec/10 + 2, and the windows spec[i:i+76] for i in
  range(0, frames, 8), those shorter than 76 frames dropped;
- Wav2Vec2's input values, written from Wav2Vec2FeatureExtractor with
  do_normalize (transformers' zero_mean_unit_var_norm): the clip at 16 kHz
  (resample_poly first where it is at another rate), then
  (x - x.mean()) / sqrt(x.var() + 1e-7);
- resample: scipy.signal.resample_poly(x, up, down) with its defaults;
- patchify: numpy's reshape and transpose of a c×h×w image into
  (h/p·w/p) rows of c·p·p values, row-major over the grid;
- WebP and JPEG: images PIL encodes and the RGB it decodes them to
  (libwebp's and libjpeg's decoders);
- resize: 8-bit images PIL resizes, and its 8-bit luma (convert("L"))
  of them resized;
- tile: LLaVA-NeXT's select_best_resolution over every grid of at most
  max_tiles tiles (written from its definition), on random sizes and on
  the boundary cases where rounding, ceiling or an unrounded area would
  choose another grid than its truncation, and the tiles of images
  whose canvas needs no resampling (the fit is the image itself, padded
  with zeros at the centre), cut row-major with numpy, and of images
  whose canvas does, resized with PIL as LLaVA-NeXT resizes them;

Every input is a 16-bit PCM WAV, so both sides read the same samples
(int / 32768). The outputs are float32 .npy files; the front ends'
features and the 30.5 s clip are gzip-compressed (.gz, with no timestamp,
so that the files are reproducible).
"""
import gzip
import io
import json
import math
import os
import struct

import numpy as np
import scipy.signal

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "audio")
IMAGE_OUT = os.path.join(HERE, "image")


def write_wav(path, rate, x):
    """x: float samples in [-1, 1), written as 16-bit PCM (int = x·32768,
    saturated), gzip-compressed where path ends in .gz."""
    pcm = np.clip(np.round(x * 32768), -32768, 32767).astype("<i2")
    data = pcm.tobytes()
    wav = (b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVE" +
           b"fmt " + struct.pack("<IHHIIHH", 16, 1, 1, rate, rate * 2, 2, 16) +
           b"data" + struct.pack("<I", len(data)) + data)
    write_bytes(path, wav)
    return pcm.astype(np.float64) / 32768


def write_bytes(path, data):
    """Writes data, gzip-compressed with no timestamp where path ends in .gz."""
    if path.endswith(".gz"):
        buf = io.BytesIO()
        with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0) as z:
            z.write(data)
        data = buf.getvalue()
    with open(path, "wb") as f:
        f.write(data)


def save(path, x):
    """Saves x as a float32 .npy, gzip-compressed where path ends in .gz."""
    buf = io.BytesIO()
    np.save(buf, np.asarray(x).astype("<f4"))
    write_bytes(path, buf.getvalue())


def signals(rate, scale=1.0):
    """The test clips at rate, their durations times scale."""
    rng = np.random.default_rng(15)
    t = lambda secs: np.arange(int(secs * scale * rate)) / rate
    out = {}
    # A linear chirp 100 Hz → 0.45·rate over 0.3 s.
    tt = t(0.3)
    f1, span = 0.45 * rate, 0.3 * scale
    out["chirp"] = 0.5 * np.sin(2 * np.pi * (100 * tt + (f1 - 100) / (2 * span) * tt**2))
    # Speech-like noise: white noise through three formant resonators, under
    # a 4 Hz syllable envelope.
    tt = t(0.4)
    x = rng.standard_normal(len(tt))
    y = np.zeros_like(x)
    for f, bw in ((500, 80), (1500, 120), (2500, 160)):
        r = math.exp(-math.pi * bw / rate)
        a = [1, -2 * r * math.cos(2 * math.pi * f / rate), r * r]
        y += scipy.signal.lfilter([1 - r], a, x)
    y *= 0.5 * (1 - np.cos(2 * np.pi * 4 * tt))
    out["speech"] = 0.3 * y / np.max(np.abs(y))
    out["silence"] = np.zeros(int(0.2 * rate))
    # A 440 Hz tone at three times full scale, clipped.
    out["clipped"] = np.clip(3 * np.sin(2 * np.pi * 440 * t(0.25)), -1, 32767 / 32768)
    # Shorter than n_fft/2: reflect padding mirrors more than once.
    out["short"] = 0.4 * np.sin(2 * np.pi * 1000 * t(100 / rate)) + 0.1
    return out


def hz_to_mel(f, htk):
    f = np.asarray(f, dtype=np.float64)
    if htk:
        return 2595.0 * np.log10(1.0 + f / 700.0)
    f_sp = 200.0 / 3
    mels = f / f_sp
    min_log_hz = 1000.0
    min_log_mel = min_log_hz / f_sp
    logstep = np.log(6.4) / 27.0
    return np.where(f >= min_log_hz, min_log_mel + np.log(np.maximum(f, 1e-300) / min_log_hz) / logstep, mels)


def mel_to_hz(m, htk):
    m = np.asarray(m, dtype=np.float64)
    if htk:
        return 700.0 * (10.0 ** (m / 2595.0) - 1.0)
    f_sp = 200.0 / 3
    freqs = f_sp * m
    min_log_hz = 1000.0
    min_log_mel = min_log_hz / f_sp
    logstep = np.log(6.4) / 27.0
    return np.where(m >= min_log_mel, min_log_hz * np.exp(logstep * (m - min_log_mel)), freqs)


def mel_bank(sr, n_fft, n_mels, fmin, fmax, htk, norm):
    fftfreqs = np.fft.rfftfreq(n_fft, d=1.0 / sr)
    mel_f = mel_to_hz(np.linspace(hz_to_mel(fmin, htk), hz_to_mel(fmax, htk), n_mels + 2), htk)
    fdiff = np.diff(mel_f)
    ramps = np.subtract.outer(mel_f, fftfreqs)
    weights = np.zeros((n_mels, len(fftfreqs)))
    for i in range(n_mels):
        lower = -ramps[i] / fdiff[i]
        upper = ramps[i + 2] / fdiff[i + 1]
        weights[i] = np.maximum(0, np.minimum(lower, upper))
    if norm:
        weights *= (2.0 / (mel_f[2 : n_mels + 2] - mel_f[:n_mels]))[:, None]
    return weights


def stft_power(x, n_fft, hop, win, power=2.0, center=True, pad_mode="reflect"):
    """|STFT|**power, [frames, n_fft//2 + 1]: frames of a periodic Hann
    window of win samples centred in n_fft, one every hop samples, of the
    clip padded by n_fft//2 on both sides (center) or of the clip itself."""
    window = np.zeros(n_fft)
    left = (n_fft - win) // 2
    window[left : left + win] = scipy.signal.get_window("hann", win, fftbins=True)
    xp = np.pad(x, n_fft // 2, mode=pad_mode) if center else x
    frames = 1 + (len(xp) - n_fft) // hop if len(x) and len(xp) >= n_fft else 0
    idx = np.arange(n_fft)[None, :] + hop * np.arange(frames)[:, None]
    return np.abs(np.fft.rfft(xp[idx] * window, axis=1)) ** power


def mel_spectrogram(x, c):
    sr, n_fft = c["sample_rate"], c["n_fft"]
    spec = stft_power(x, n_fft, c.get("hop_length", n_fft // 4), c.get("win_length", n_fft), c.get("power", 2.0),
                      c.get("center", True), c.get("pad_mode", "reflect"))
    bank = mel_bank(sr, n_fft, c["n_mels"], c.get("f_min", 0.0), c.get("f_max", sr / 2),
                    c.get("mel_scale", "slaney") == "htk", c.get("norm", "slaney") == "slaney")
    return spec @ bank.T


def log(x, c):
    y = np.maximum(x + c.get("offset", 0.0), c.get("floor", 1e-10))
    base = c.get("base")
    y = np.log(y) if base is None else np.log(y) / np.log(base) if base not in (10, 2) else (np.log10(y) if base == 10 else np.log2(y))
    if "dynamic_range" in c and y.size:
        y = np.maximum(y, y.max() - c["dynamic_range"])
    return y


MEL_CONFIGS = {
    # Whisper's front end: 25 ms Hann frames every 10 ms, 80 Slaney bands,
    # log10 clamped at 1e-10 and 8 decades below the clip's peak.
    "whisper": ({"sample_rate": 16000, "n_fft": 400, "hop_length": 160, "n_mels": 80},
                {"base": 10, "floor": 1e-10, "dynamic_range": 8.0}),
    # Every option away from its default.
    "options": ({"sample_rate": 16000, "n_fft": 512, "win_length": 400, "hop_length": 128, "n_mels": 40,
                 "f_min": 20.0, "f_max": 7600.0, "power": 1.0, "mel_scale": "htk", "norm": "none",
                 "pad_mode": "constant"},
                {"offset": 1e-6}),
    # Uncentred frames, as openWakeWord's melspectrogram model computes
    # them: 25 ms windows in 512-sample FFTs every 10 ms, 32 bands from 60
    # to 3800 Hz.
    "uncentred": ({"sample_rate": 16000, "n_fft": 512, "win_length": 400, "hop_length": 160, "n_mels": 32,
                   "f_min": 60.0, "f_max": 3800.0, "center": False},
                  {"base": 10, "floor": 1e-10, "dynamic_range": 8.0}),
}

# Whisper's N_SAMPLES (30 s at 16 kHz) and N_FRAMES.
WHISPER_SAMPLES, WHISPER_FRAMES = 480000, 3000


def pad_or_trim(x, length):
    """whisper.audio.pad_or_trim on the last axis: the first length
    values, zeros appended."""
    return np.pad(x[:length], (0, max(0, length - len(x))))


def whisper_log_mel(audio):
    """whisper.audio.log_mel_spectrogram(pad_or_trim(audio)), as
    [frames, bands]."""
    audio = pad_or_trim(audio, WHISPER_SAMPLES)
    magnitudes = stft_power(audio, 400, 160, 400)[:-1]  # stft[..., :-1].abs() ** 2
    mel_spec = magnitudes @ mel_bank(16000, 400, 80, 0.0, 8000.0, htk=False, norm=True).T
    log_spec = np.log10(np.maximum(mel_spec, 1e-10))
    log_spec = np.maximum(log_spec, log_spec.max() - 8.0)
    return (log_spec + 4.0) / 4.0


def wav2vec2_values(x):
    """Wav2Vec2FeatureExtractor's input values of a clip at 16 kHz."""
    return (x - x.mean()) / np.sqrt(x.var() + 1e-7)


def wakeword_windows(x):
    """openWakeWord's embedding-model input of a clip, [windows, 76, 32]."""
    audio = x * 32768  # the int16 samples as float32
    mel = stft_power(audio, 512, 160, 400, center=False) @ mel_bank(16000, 512, 32, 60.0, 3800.0, htk=False, norm=True).T
    log_spec = 10.0 * np.log10(np.maximum(mel, 1e-10))
    if log_spec.size:
        log_spec = np.maximum(log_spec, log_spec.max() - 80.0)
    spec = log_spec / 10 + 2
    windows = [spec[i:i + 76] for i in range(0, spec.shape[0], 8)]
    return np.array([w for w in windows if w.shape[0] == 76]).reshape(-1, 76, 32)


def front_end_clips():
    """The clips of the front-end oracles: the test clips at 16 kHz four
    times as long (openWakeWord's windows need 12512 samples), 1 s of
    silence, and for
    Whisper a clip of 30.5 s, silent but for speech-like noise and a chirp
    around the 30 s it keeps."""
    clips = signals(16000, 4.0)
    clips["silence"] = np.zeros(16000)
    sig = signals(16000)
    long = np.zeros(int(30.5 * 16000))
    at = WHISPER_SAMPLES - len(sig["speech"]) // 2
    long[at:at + len(sig["speech"])] = sig["speech"]
    long[-len(sig["chirp"]):] += sig["chirp"]
    clips["long"] = long
    return clips


RESAMPLES = [(44100, 16000), (48000, 16000), (8000, 16000), (22050, 16000), (16000, 44100)]


def main():
    os.makedirs(OUT, exist_ok=True)
    index = {"mel": [], "resample": [], "wav2vec2": []}
    for name, x in signals(16000).items():
        wav = f"{name}_16000.wav"
        x = write_wav(os.path.join(OUT, wav), 16000, x)
        for cname, (mc, lc) in MEL_CONFIGS.items():
            mel = mel_spectrogram(x, mc)
            lm = log(mel, lc)
            base = f"{name}_{cname}"
            np.save(os.path.join(OUT, base + "_mel.npy"), mel.astype("<f4"))
            np.save(os.path.join(OUT, base + "_log.npy"), lm.astype("<f4"))
            index["mel"].append({"wav": wav, "config": cname, "mel_params": mc, "log_params": lc,
                                 "mel": base + "_mel.npy", "log": base + "_log.npy"})
        if name in ("chirp", "speech", "silence"):
            out = f"{name}_16000_wav2vec2.npy"
            np.save(os.path.join(OUT, out), wav2vec2_values(x).astype("<f4"))
            index["wav2vec2"].append({"wav": wav, "values": out})
    index["whisper"], index["wakeword"] = [], []
    for name, x in front_end_clips().items():
        wav = f"fe_{name}_16000.wav" + (".gz" if name == "long" else "")
        x = write_wav(os.path.join(OUT, wav), 16000, x)
        if name in ("chirp", "speech", "silence", "long"):
            out = f"fe_{name}_whisper.npy.gz"
            save(os.path.join(OUT, out), whisper_log_mel(x))
            index["whisper"].append({"wav": wav, "features": out})
        if name != "long":
            out = f"fe_{name}_wakeword.npy.gz"
            save(os.path.join(OUT, out), wakeword_windows(x))
            index["wakeword"].append({"wav": wav, "windows": out})
    for src, dst in RESAMPLES:
        for name in ("chirp", "speech"):
            x = signals(src, 0.25)[name]
            wav = f"rs_{name}_{src}.wav"
            x = write_wav(os.path.join(OUT, wav), src, x)
            g = math.gcd(src, dst)
            y = scipy.signal.resample_poly(x, dst // g, src // g)
            out = f"{name}_{src}_to_{dst}.npy"
            np.save(os.path.join(OUT, out), y.astype("<f4"))
            index["resample"].append({"wav": wav, "sample_rate": dst, "expected": out})
            if dst == 16000 and name == "speech":
                out = f"{name}_{src}_wav2vec2.npy"
                np.save(os.path.join(OUT, out), wav2vec2_values(y).astype("<f4"))
                index["wav2vec2"].append({"wav": wav, "values": out})
    with open(os.path.join(OUT, "index.json"), "w") as f:
        json.dump(index, f, indent=1, sort_keys=True)
        f.write("\n")


def select_best_resolution(h, w, tile, max_tiles, side=int, exact=False):
    """LLaVA-NeXT's choice among the canvases of every grid (rows, cols)
    with rows·cols ≤ max_tiles, in order of rows then columns. side turns
    a scaled side into pixels (LLaVA-NeXT's int(): truncation); exact
    keeps the scaled area unrounded. The two exist to find the cases where
    a wrong rounding chooses another grid (grid_boundaries)."""
    best, best_eff, best_waste = None, 0, float("inf")
    for r in range(1, max_tiles + 1):
        for c in range(1, max_tiles // r + 1):
            width, height = c * tile, r * tile
            scale = min(width / w, height / h)
            if exact:
                eff = min(w * scale * h * scale, w * h)
            else:
                eff = min(side(w * scale) * side(h * scale), w * h)
            waste = width * height - eff
            if eff > best_eff or (eff == best_eff and waste < best_waste):
                best, best_eff, best_waste = (r, c), eff, waste
    return best


# The wrong roundings of the scaled sides grid_boundaries guards against:
# each chooses another grid than truncation on every case listed under it.
WRONG_SIDES = {
    "round": {"side": lambda x: math.floor(x + 0.5)},
    "ceil": {"side": math.ceil},
    "unrounded": {"exact": True},
}


def grid_boundaries(rng, per_size=25):
    """For each wrong rounding, cases (h, w, tile, max_tiles, rows, cols,
    rows and cols by truncation) where it chooses another grid: per_size
    with LLaVA's tile sizes and per_size with small tiles, where scaled
    sides land near an integer (the search is seeded, so the file is
    stable)."""
    out = {}
    for name, wrong in WRONG_SIDES.items():
        cases = []
        for sizes in ([224, 336, 384, 448], [2, 3, 4, 7, 14]):
            found = 0
            for _ in range(400000):
                tile = int(rng.choice(sizes))
                mt = int(rng.integers(2, 13))
                h, w = int(rng.integers(1, 2 * tile * mt)), int(rng.integers(1, 2 * tile * mt))
                want = select_best_resolution(h, w, tile, mt)
                if select_best_resolution(h, w, tile, mt, **wrong) != want:
                    cases.append([h, w, tile, mt, want[0], want[1]])
                    found += 1
                    if found == per_size:
                        break
            assert found == per_size, (name, sizes, found)
        out[name] = cases
    return out


def tiles_of(img, tile, grid, thumbnail):
    """img: c×h×w uint8 that fits the grid's canvas unresampled."""
    c, h, w = img.shape
    r, cols = grid
    canvas = np.zeros((c, r * tile, cols * tile), dtype=np.float32)
    top, left = (r * tile - h) // 2, (cols * tile - w) // 2
    canvas[:, top:top + h, left:left + w] = img
    t = canvas.reshape(c, r, tile, cols, tile).transpose(1, 3, 0, 2, 4).reshape(r * cols, c, tile, tile)
    if thumbnail == "first":
        t = np.concatenate([img[None].astype(np.float32), t])
    elif thumbnail == "last":
        t = np.concatenate([t, img[None].astype(np.float32)])
    return t


def image_oracle():
    os.makedirs(IMAGE_OUT, exist_ok=True)
    rng = np.random.default_rng(151)
    index = {"grids": [], "patchify": [], "tile": []}
    for _ in range(400):
        h, w = int(rng.integers(1, 2000)), int(rng.integers(1, 2000))
        tile = int(rng.choice([224, 336, 384, 448]))
        mt = int(rng.integers(1, 13))
        r, c = select_best_resolution(h, w, tile, mt)
        index["grids"].append([h, w, tile, mt, r, c])
    index["grid_boundaries"] = grid_boundaries(np.random.default_rng(152))
    for name, (c, h, w, p) in {"rgb_4x6_p2": (3, 8, 12, 2), "gray_14": (1, 28, 42, 14), "rgb_1x1": (3, 5, 5, 5)}.items():
        img = rng.integers(0, 256, size=(c, h, w), dtype=np.uint8)
        patches = img.astype(np.float32).reshape(c, h // p, p, w // p, p).transpose(1, 3, 0, 2, 4).reshape(-1, c * p * p)
        np.save(os.path.join(IMAGE_OUT, name + ".npy"), img)
        np.save(os.path.join(IMAGE_OUT, name + "_patches.npy"), patches)
        index["patchify"].append({"image": name + ".npy", "patch_size": p, "patches": name + "_patches.npy", "grid": [h // p, w // p]})
    for name, (c, h, w, tile, mt, thumb) in {
        "exact_2x3": (3, 8, 12, 4, 6, "none"),
        "padded_w": (3, 8, 10, 4, 6, "none"),
        "padded_h": (1, 6, 16, 4, 8, "none"),
        "one_tile_first": (3, 4, 4, 4, 4, "first"),
        "one_tile_last": (3, 4, 4, 4, 1, "last"),
    }.items():
        img = rng.integers(0, 256, size=(c, h, w), dtype=np.uint8)
        grid = select_best_resolution(h, w, tile, mt)
        rows, cols = grid
        assert h == rows * tile or w == cols * tile, name  # the fit is the image itself
        assert h <= rows * tile and w <= cols * tile, name
        t = tiles_of(img, tile, grid, thumb)
        np.save(os.path.join(IMAGE_OUT, name + ".npy"), img)
        np.save(os.path.join(IMAGE_OUT, name + "_tiles.npy"), t)
        index["tile"].append({"image": name + ".npy", "tile_size": tile, "max_tiles": mt, "thumbnail": thumb,
                              "tiles": name + "_tiles.npy", "grid": list(grid)})
    index["tile"] += resampled_tiles()
    index["webp"] = webp_oracle()
    index["jpeg"] = jpeg_oracle()
    index["resize"] = resize_oracle()
    with open(os.path.join(IMAGE_OUT, "index.json"), "w") as f:
        json.dump(index, f, indent=1, sort_keys=True)
        f.write("\n")


def resampled_tiles():
    """Tiles of images whose canvas needs resampling, as LLaVA-NeXT's
    resize_and_pad_image and divide_to_patches make them with PIL: the
    8-bit image resized (PIL's default filter, bicubic) to the side that
    binds and ceil(side * scale) on the other, pasted at the centre of a
    black canvas, cut row-major; the thumbnail the image resized to one
    tile."""
    from PIL import Image

    rng = np.random.default_rng(156)
    cases = []
    for name, (c, h, w, tile, mt, thumb) in {
        "resampled_rgb": (3, 10, 7, 4, 4, "first"),
        "resampled_wide": (3, 9, 26, 6, 6, "last"),
        "resampled_gray": (1, 13, 30, 8, 6, "none"),
    }.items():
        img = rng.integers(0, 256, size=(c, h, w), dtype=np.uint8)
        rows, cols = select_best_resolution(h, w, tile, mt)
        mode = "RGB" if c == 3 else "L"
        im = Image.fromarray(img.transpose(1, 2, 0) if c == 3 else img[0], mode)
        tw, th = cols * tile, rows * tile
        sw, sh = tw / w, th / h
        if sw < sh:
            nw, nh = tw, min(math.ceil(h * sw), th)
        else:
            nw, nh = min(math.ceil(w * sh), tw), th
        canvas = Image.new(mode, (tw, th), 0)
        canvas.paste(im.resize((nw, nh), Image.BICUBIC), ((tw - nw) // 2, (th - nh) // 2))
        planes = np.asarray(canvas, dtype=np.float32).reshape(th, tw, c).transpose(2, 0, 1)
        t = planes.reshape(c, rows, tile, cols, tile).transpose(1, 3, 0, 2, 4).reshape(rows * cols, c, tile, tile)
        thumbnail = np.asarray(im.resize((tile, tile), Image.BICUBIC), dtype=np.float32).reshape(tile, tile, c).transpose(2, 0, 1)[None]
        if thumb == "first":
            t = np.concatenate([thumbnail, t])
        elif thumb == "last":
            t = np.concatenate([t, thumbnail])
        np.save(os.path.join(IMAGE_OUT, name + ".npy"), img)
        np.save(os.path.join(IMAGE_OUT, name + "_tiles.npy"), t.astype(np.float32))
        cases.append({"image": name + ".npy", "tile_size": tile, "max_tiles": mt, "thumbnail": thumb,
                      "tiles": name + "_tiles.npy", "grid": [rows, cols]})
    return cases


def resize_oracle():
    """8-bit images PIL resizes (bilinear, bicubic, nearest; shrinking,
    enlarging, one side or both), and PIL's 8-bit luma of each, resized
    too: the input and each output as h×w×3 (or h×w) uint8 arrays."""
    from PIL import Image

    rng = np.random.default_rng(155)
    filters = {"bilinear": Image.BILINEAR, "bicubic": Image.BICUBIC, "nearest": Image.NEAREST}
    cases = []
    for h, w, kind, rgb in test_images(rng):
        if (h, w, kind) not in [(11, 17, "noise"), (33, 9, "pattern")]:
            continue
        src = "resize_%dx%d_%s.npy" % (h, w, kind)
        np.save(os.path.join(IMAGE_OUT, src), rgb)
        for oh, ow in [(max(h // 3, 1), max(w // 2, 1)), (h * 2 + 1, w + 3), (h, max(w // 3, 1)), (5, 5)]:
            for interp, f in filters.items():
                for mode in ["RGB", "L"]:
                    name = "resize_%dx%d_%s_%dx%d_%s_%s.npy" % (h, w, kind, oh, ow, interp, mode)
                    img = Image.fromarray(rgb).convert(mode)
                    np.save(os.path.join(IMAGE_OUT, name), np.asarray(img.resize((ow, oh), f)))
                    cases.append({"image": src, "height": oh, "width": ow, "interpolation": interp, "mode": mode, "resized": name})
    return cases


def jpeg_oracle():
    """JPEGs PIL encodes (quality 90, chroma 4:4:4, 4:2:2 and 4:2:0), of odd
    and even sides, and the RGB PIL decodes of each (libjpeg's decoder),
    as h×w×3 uint8 arrays."""
    from PIL import Image

    rng = np.random.default_rng(154)
    cases = []
    for h, w, kind, rgb in test_images(rng):
        for sub, ratio in [(0, "444"), (1, "422"), (2, "420")]:
            name = "jpeg_%dx%d_%s_%s" % (h, w, kind, ratio)
            buf = io.BytesIO()
            Image.fromarray(rgb).save(buf, "JPEG", quality=90, subsampling=sub)
            cases.append(decoded_by_pil("jpeg", name + ".jpg", name + ".npy", buf.getvalue()))
    return cases


def test_images(rng):
    """Yields h, w, a kind and an h×w×3 uint8 image of it, of odd and even
    sides: noise, and a pattern of sharp colour edges; the noise drawn from
    rng as each is yielded."""
    for h, w in [(1, 1), (2, 3), (11, 17), (33, 9)]:
        for kind in ["noise", "pattern"]:
            if kind == "noise":
                rgb = rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8)
            else:
                y, x = np.mgrid[0:h, 0:w]
                rgb = np.stack([(x * 37) % 256, (y * 53) % 256, (x * y * 7) % 256], -1).astype(np.uint8)
            yield h, w, kind, rgb


def decoded_by_pil(key, encoded, rgb, data):
    """Writes an encoding and the RGB PIL decodes it to, and returns their
    index entry."""
    from PIL import Image

    write_bytes(os.path.join(IMAGE_OUT, encoded), data)
    np.save(os.path.join(IMAGE_OUT, rgb), np.asarray(Image.open(io.BytesIO(data)).convert("RGB")))
    return {key: encoded, "rgb": rgb}


def webp_oracle():
    """WebP images PIL encodes (lossy at several qualities, with and
    without alpha, and lossless), of odd and even sides, and the RGB PIL
    decodes of each (libwebp's decoder, alpha dropped by convert("RGB")),
    as h×w×3 uint8 arrays."""
    from PIL import Image

    rng = np.random.default_rng(153)
    cases = []
    for h, w, kind, rgb in test_images(rng):
        for mode in ["lossy", "lossy_alpha", "lossless"]:
            img = Image.fromarray(rgb)
            if mode == "lossy_alpha":
                img = Image.fromarray(np.dstack([rgb, rng.integers(0, 256, size=(h, w), dtype=np.uint8)]), "RGBA")
            name = "webp_%dx%d_%s_%s" % (h, w, kind, mode)
            buf = io.BytesIO()
            if mode == "lossless":
                img.save(buf, "WEBP", lossless=True)
            else:
                img.save(buf, "WEBP", quality=int(rng.integers(30, 100)))
            cases.append(decoded_by_pil("webp", name + ".webp", name + ".npy", buf.getvalue()))
    return cases


if __name__ == "__main__":
    main()
    image_oracle()
