#!/usr/bin/env python3
"""A client of the Open Inference Protocol (KServe v2) REST API, written from
the protocol's specification alone, with the standard library only.

usage: oip_client.py BASE_URL MODEL INPUTS_JSON

INPUTS_JSON is a list of tensors [{"name", "datatype", "shape", "data"}].
The client checks the server and model health, reads the model metadata,
checks the inputs against it, then infers twice: once with JSON tensors,
once with the binary tensor extension (inputs and outputs as binary data).
It prints {"metadata": ..., "json": OUTPUTS, "binary": OUTPUTS}, each
OUTPUTS a map from output name to {"datatype", "shape", "data"}.
"""
import json
import struct
import sys
import urllib.error
import urllib.request

FORMATS = {"BOOL": "?", "UINT8": "B", "UINT16": "H", "UINT32": "I", "UINT64": "Q",
           "INT8": "b", "INT16": "h", "INT32": "i", "INT64": "q", "FP32": "f", "FP64": "d"}


def call(url, body=None, headers=None):
    req = urllib.request.Request(url, data=body, headers=headers or {},
                                 method="POST" if body is not None else "GET")
    with urllib.request.urlopen(req, timeout=60) as resp:
        return resp.status, dict(resp.headers), resp.read()


def outputs_of(header, binary):
    out = {}
    for o in header["outputs"]:
        params = o.get("parameters") or {}
        if "binary_data_size" in params:
            n = params["binary_data_size"]
            chunk, binary = binary[:n], binary[n:]
            fmt = FORMATS[o["datatype"]]
            data = list(struct.unpack("<%d%s" % (n // struct.calcsize(fmt), fmt), chunk))
        else:
            data = o["data"]
        out[o["name"]] = {"datatype": o["datatype"], "shape": o["shape"], "data": data}
    return out


def main():
    base, model, inputs_path = sys.argv[1:4]
    with open(inputs_path) as f:
        inputs = json.load(f)
    status, _, _ = call(base + "/v2/health/live")
    assert status == 200, "server not live"
    status, _, _ = call(base + "/v2/health/ready")
    assert status == 200, "server not ready"
    status, _, _ = call(base + "/v2/models/%s/ready" % model)
    assert status == 200, "model not ready"
    _, _, body = call(base + "/v2/models/" + model)
    metadata = json.loads(body)
    declared = {t["name"]: t for t in metadata["inputs"]}
    for t in inputs:
        assert t["name"] in declared, "model has no input " + t["name"]
        assert declared[t["name"]]["datatype"] == t["datatype"], "datatype of " + t["name"]
        assert len(declared[t["name"]]["shape"]) == len(t["shape"]), "rank of " + t["name"]

    # JSON tensors.
    req = {"id": "json", "inputs": inputs}
    _, _, body = call(base + "/v2/models/%s/infer" % model, json.dumps(req).encode(),
                      {"Content-Type": "application/json"})
    resp = json.loads(body)
    assert resp["model_name"] == model and resp["id"] == "json"
    as_json = outputs_of(resp, b"")

    # The binary tensor extension: the JSON header, then each input's
    # little-endian bytes in order; outputs asked for as binary data.
    blob = b""
    bin_inputs = []
    for t in inputs:
        raw = struct.pack("<%d%s" % (len(t["data"]), FORMATS[t["datatype"]]), *t["data"])
        blob += raw
        bin_inputs.append({"name": t["name"], "datatype": t["datatype"], "shape": t["shape"],
                           "parameters": {"binary_data_size": len(raw)}})
    header = json.dumps({"id": "binary", "inputs": bin_inputs,
                         "parameters": {"binary_data_output": True}}).encode()
    _, headers, body = call(base + "/v2/models/%s/infer" % model, header + blob,
                            {"Content-Type": "application/octet-stream",
                             "Inference-Header-Content-Length": str(len(header))})
    n = int({k.lower(): v for k, v in headers.items()}["inference-header-content-length"])
    as_binary = outputs_of(json.loads(body[:n]), body[n:])

    # An unknown model is a 404.
    try:
        call(base + "/v2/models/no-such-model")
        raise AssertionError("an unknown model was found")
    except urllib.error.HTTPError as e:
        assert e.code == 404, e.code

    json.dump({"metadata": metadata, "json": as_json, "binary": as_binary}, sys.stdout)


if __name__ == "__main__":
    main()
