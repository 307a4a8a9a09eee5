"""Writes the TFRecord fixtures of tests/data/tensorflow_files_test.cc with TensorFlow itself.

Run once, by hand, with TensorFlow 2.15 (tensorflow-cpu 2.15.1 was used; CI does not run it):

    python3 -m venv /tmp/tfvenv && /tmp/tfvenv/bin/pip install tensorflow-cpu==2.15.1
    /tmp/tfvenv/bin/python tests/data/tensorflow_files/make_tensorflow_files.py

It writes, beside itself, TFRecord files of tf.train.Example and tf.train.SequenceExample
records (plain, GZIP and ZLIB, one with a 100 KiB bytes value, files with no records) using
tf.io.TFRecordWriter, then reads each file back with tf.data.TFRecordDataset and parses every
record with tf.io.parse_single_example / parse_single_sequence_example. What TensorFlow parsed
goes into expected.json, with the spec it parsed by, so the C++ test asserts that our reader
and parser give exactly what TensorFlow gives. Rerunning it rewrites identical files.

expected.json: {"tensorflow_version", "files": {NAME: {"compression", "kind", "label_key", "spec",
"records"}}}, where kind is "Example" or "SequenceExample" and label_key names the (context)
feature the C++ test parses as the labels ("" for none).
- spec: NAME -> {"type": "float32"|"int64"|"bytes", "shape": [...], "default": VALUES}
  (FixedLen; default optional), or {"type": ..., "var_len": true} (VarLen). A
  SequenceExample file's spec is {"context": SPEC, "sequence": SPEC}; its sequence features
  are FixedLenSequenceFeature(shape, allow_missing=True).
- records: one per record, NAME -> {"shape": [...], "values": VALUES}, TensorFlow's dense
  tensor (a VarLen feature: its SparseTensor's dense_shape and values); a SequenceExample
  record is {"context": ..., "sequence": ...}.
- VALUES, flat in row-major order: int64 as JSON integers; float32 as JSON numbers (the exact
  float32 value), or, when not finite, "0x" and the 8 hex digits of their IEEE-754 bits
  (NaN's bits included); bytes as hex strings, or {"repeat_hex": HEX, "times": N} for HEX's
  bytes repeated N times.
"""

import json
import math
import os

import numpy as np
import tensorflow as tf

HERE = os.path.dirname(os.path.abspath(__file__))
NEGATIVE_NAN = -math.nan  # sign bit set: 0xffc00000 as float32
LONG_BYTES = bytes(range(256)) * 400  # 100 KiB of every byte value, small once compressed


def floats(*values):
    return tf.train.Feature(float_list=tf.train.FloatList(value=values))


def ints(*values):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=values))


def strings(*values):
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=values))


def example(**features):
    return tf.train.Example(features=tf.train.Features(feature=features))


def sequence_example(context, **feature_lists):
    lists = {name: tf.train.FeatureList(feature=steps) for name, steps in feature_lists.items()}
    return tf.train.SequenceExample(context=tf.train.Features(feature=context),
                                    feature_lists=tf.train.FeatureLists(feature_list=lists))


EXAMPLE_SPEC = {
    "floats": {"type": "float32", "shape": [2, 3]},
    "ints": {"type": "int64", "shape": [4]},
    "label": {"type": "int64", "shape": []},
    "name": {"type": "bytes", "shape": []},
    "pair": {"type": "bytes", "shape": [2]},
    "weight": {"type": "float32", "shape": [2], "default": [0.25, -1.0]},
    "tokens": {"type": "int64", "var_len": True},
    "scores": {"type": "float32", "var_len": True},
    "chars": {"type": "bytes", "var_len": True},  # values of one record have one length
}

EXAMPLES = [
    example(floats=floats(1.5, -2.25, 0.0, -0.0, 3.4028234663852886e38, 1e-45),
            ints=ints(0, -1, 2**40 + 7, -2**63), label=ints(3), name=strings(b""),
            pair=strings(b"\xff\x00", b"ab"), weight=floats(0.5, 2.0), tokens=ints(1, 2**33, -5),
            scores=floats(0.1), chars=strings(b"\x80\x81\x82", b"xyz")),
    example(floats=floats(math.nan, math.inf, -math.inf, NEGATIVE_NAN, -1.0, 1.17549435e-38),
            ints=ints(2**63 - 1, 2**32, -2**32 - 1, 7), label=ints(0),
            name=strings(b"\xff\xfe\xfd not UTF-8 \xc3\x28"), pair=strings(b"", b""), tokens=ints()),
    example(floats=floats(*range(-3, 3)), ints=ints(*range(4)), label=ints(-1),
            name=strings("h\u00e9llo".encode()), pair=strings(b"\x00", b"\x01"), weight=floats(-0.0, 1e30),
            tokens=ints(42), scores=floats(1.0, math.nan, -0.0, 2.5), chars=strings(b"", b"")),
]

LONG_EXAMPLE = example(floats=floats(*[0.5] * 6), ints=ints(-7, -7, -7, -7), label=ints(5),
                       name=strings(LONG_BYTES), pair=strings(b"AB", b"CD"), tokens=ints(*range(100)))

EMPTY_SPEC = {
    "x": {"type": "float32", "shape": [2], "default": [1.5, -0.5]},
    "n": {"type": "int64", "shape": [], "default": [9]},
    "s": {"type": "bytes", "shape": [], "default": [b"dflt".hex()]},
    "v": {"type": "int64", "var_len": True},
    "b": {"type": "bytes", "var_len": True},
}

EMPTY_EXAMPLES = [
    tf.train.Example(),  # serializes to no bytes at all
    example(),  # features set, but no feature: two bytes
    example(v=tf.train.Feature(), b=strings()),  # a Feature with no list, an empty list
]

SEQUENCE_SPEC = {
    "context": {
        "label": {"type": "int64", "shape": [], "default": [-1]},
        "scale": {"type": "float32", "shape": [], "default": [1.0]},
        "id": {"type": "bytes", "shape": [], "default": [b"none".hex()]},
        "extra": {"type": "int64", "shape": [2], "default": [7, -7]},
    },
    "sequence": {
        "frames": {"type": "float32", "shape": [2]},
        "steps": {"type": "int64", "shape": []},
        "words": {"type": "bytes", "shape": []},  # values of one record have one length
    },
}

SEQUENCE_EXAMPLES = [
    sequence_example({"label": ints(1), "scale": floats(0.5), "id": strings(b"seq-0")},
                     frames=[floats(0, 0.5), floats(1, -1.5), floats(2, math.inf)],
                     steps=[ints(10), ints(-2**62), ints(2**35)],
                     words=[strings(b"ab"), strings(b"\xff\x00"), strings(b"yz")]),
    sequence_example({"label": ints(2), "scale": floats(-math.inf), "id": strings(b""),
                      "extra": ints(1, 2**40)},
                     frames=[]),  # frames present with no steps, the others missing
    sequence_example({"id": strings(b"\x80")}, frames=[floats(math.nan, -0.0)], steps=[ints(-1)],
                     words=[strings(b"")]),
    tf.train.SequenceExample(),  # no bytes at all: every default, no steps
]

# name -> (compression, kind, spec, records)
FILES = {
    "examples.tfrecord": ("NONE", "Example", EXAMPLE_SPEC, EXAMPLES),
    "examples_gzip.tfrecord": ("GZIP", "Example", EXAMPLE_SPEC, EXAMPLES + [LONG_EXAMPLE]),
    "examples_zlib.tfrecord": ("ZLIB", "Example", EXAMPLE_SPEC, EXAMPLES),
    "empty_examples.tfrecord": ("NONE", "Example", EMPTY_SPEC, EMPTY_EXAMPLES),
    "sequence_examples.tfrecord": ("NONE", "SequenceExample", SEQUENCE_SPEC, SEQUENCE_EXAMPLES),
    "sequence_examples_gzip.tfrecord": ("GZIP", "SequenceExample", SEQUENCE_SPEC, SEQUENCE_EXAMPLES),
    "no_records.tfrecord": ("NONE", "Example", EMPTY_SPEC, []),
    "no_records_gzip.tfrecord": ("GZIP", "Example", EMPTY_SPEC, []),
    "no_records_zlib.tfrecord": ("ZLIB", "Example", EMPTY_SPEC, []),
}
DTYPES = {"float32": tf.float32, "int64": tf.int64, "bytes": tf.string}


def encode_bytes(value):
    """Hex, or {"repeat_hex", "times"} for a long value made of one short pattern repeated."""
    if len(value) > 1024:
        for period in range(1, 257):
            times, rest = divmod(len(value), period)
            if rest == 0 and value[:period] * times == value:
                return {"repeat_hex": value[:period].hex(), "times": times}
    return value.hex()


def encode_values(array):
    """The flat values of a numpy array, as expected.json holds them (see the module comment)."""
    flat = np.asarray(array, dtype=object if isinstance(array, bytes) else None).ravel()  # a string scalar is bytes
    if flat.dtype == np.float32:
        return [float(v) if np.isfinite(v) else "0x%08x" % v.view(np.uint32) for v in flat]
    if flat.dtype == np.int64:
        return [int(v) for v in flat]
    return [encode_bytes(v) for v in flat]


def encode_tensor(tensor):
    """{"shape", "values"} of a parsed tensor: a dense one, or a VarLen feature's SparseTensor."""
    if isinstance(tensor, tf.SparseTensor):
        return {"shape": tensor.dense_shape.numpy().tolist(), "values": encode_values(tensor.values.numpy())}
    return {"shape": tensor.shape.as_list(), "values": encode_values(tensor.numpy())}


def tf_feature(entry, sequence=False):
    """TensorFlow's parsing config for one spec entry."""
    dtype = DTYPES[entry["type"]]
    if entry.get("var_len"):
        return tf.io.VarLenFeature(dtype)
    if sequence:
        return tf.io.FixedLenSequenceFeature(entry["shape"], dtype, allow_missing=True)
    default = entry.get("default")
    if default is not None and dtype == tf.string:
        default = [bytes.fromhex(v) for v in default]
    if default is not None:
        default = np.reshape(default, entry["shape"]).tolist()
    return tf.io.FixedLenFeature(entry["shape"], dtype, default_value=default)


def parse(kind, spec, record):
    """What TensorFlow parses `record` into, encoded for expected.json."""
    if kind == "Example":
        parsed = tf.io.parse_single_example(record, {k: tf_feature(v) for k, v in spec.items()})
        return {k: encode_tensor(v) for k, v in parsed.items()}
    context, sequence = tf.io.parse_single_sequence_example(
        record, context_features={k: tf_feature(v) for k, v in spec["context"].items()},
        sequence_features={k: tf_feature(v, sequence=True) for k, v in spec["sequence"].items()})
    return {"context": {k: encode_tensor(v) for k, v in context.items()},
            "sequence": {k: encode_tensor(v) for k, v in sequence.items()}}


def dump(expected):
    """expected.json's text: one line per file's header and per record."""
    compact = lambda value: json.dumps(value, sort_keys=True)
    files = []
    for name, contents in expected.items():
        header = {k: v for k, v in contents.items() if k != "records"}
        records = ",\n".join("   " + compact(record) for record in contents["records"])
        files.append(f"  {compact(name)}: {compact(header)[:-1]}, \"records\": [\n{records}]}}")
    return (f"{{\"tensorflow_version\": {compact(tf.__version__)}, \"files\": {{\n" + ",\n".join(files) +
            "}}\n")


def main():
    expected = {}
    for name, (compression, kind, spec, records) in FILES.items():
        path = os.path.join(HERE, name)
        tf_compression = "" if compression == "NONE" else compression  # TensorFlow's name for none
        with tf.io.TFRecordWriter(path, tf.io.TFRecordOptions(compression_type=tf_compression)) as writer:
            for record in records:
                writer.write(record.SerializeToString())
        label_key = "label" if "label" in spec.get("context", spec) else ""  # becomes the labels
        read = list(tf.data.TFRecordDataset(path, compression_type=tf_compression))
        assert [r.numpy() for r in read] == [r.SerializeToString() for r in records], name
        expected[name] = {"compression": compression, "kind": kind, "label_key": label_key,
                          "spec": spec, "records": [parse(kind, spec, r) for r in read]}
        print(f"{name}: {len(records)} records, {os.path.getsize(path)} bytes")
    with open(os.path.join(HERE, "expected.json"), "w") as out:
        out.write(dump(expected))


if __name__ == "__main__":
    main()
