"""Checks our TFRecord files of tf.train.Example records with readers that share no code with ours.

usage: tensorboard_reads_examples.py DIR

DIR holds examples.tfrecord and examples_gzip.tfrecord as write_test_examples.cc writes them.
Each is read with TensorBoard's own TFRecord reader (PyRecordReader_New, which checks both
CRC32C checksums of every record) and every record decoded with the protobuf Python runtime
into tf.train.Example, built here from TensorFlow's field numbers
(tensorflow/core/example/feature.proto and example.proto): TensorBoard's environment has no
example_pb2. Every record must hold exactly the values of EXPECTED, floats bit for bit.
"""

import gzip
import math
import os
import struct
import sys
import tempfile

from google.protobuf import descriptor_pb2, message_factory
from tensorboard.compat.tensorflow_stub import errors, pywrap_tensorflow

FLOAT32_MAX = struct.unpack("<f", bytes.fromhex("ffff7f7f"))[0]
FLOAT32_DENORM_MIN = struct.unpack("<f", bytes.fromhex("01000000"))[0]
LONG_BYTES = bytes(range(256)) * 400

# What write_test_examples.cc writes: per record, feature name -> (list kind, values); None
# for an Example without its features field.
EXPECTED = [
    {
        "floats": ("float_list", [1.5, -2.25, 0.0, -0.0, math.inf, -math.inf, math.nan, -math.nan,
                                  FLOAT32_DENORM_MIN, FLOAT32_MAX]),
        "ints": ("int64_list", [0, -1, 2**40 + 7, -2**63, 2**63 - 1, 2**32]),
        "bytes": ("bytes_list", [b"", b"\xff\xfe\x00\x80", "h\u00e9llo".encode()]),
        "label": ("int64_list", [7]),
    },
    None,
    {
        "long": ("bytes_list", [LONG_BYTES]),
        "empty_floats": ("float_list", []),
        "empty_ints": ("int64_list", []),
        "empty_bytes": ("bytes_list", []),
    },
    {},
]

Field = descriptor_pb2.FieldDescriptorProto


def field(name, number, kind, type_name=None, repeated=False, oneof_index=None):
    """One field of a message descriptor."""
    proto = Field(name=name, number=number, type=kind, type_name=type_name,
                  label=Field.LABEL_REPEATED if repeated else Field.LABEL_OPTIONAL)
    if oneof_index is not None:
        proto.oneof_index = oneof_index
    return proto


def map_field(message, name, value_type):
    """A map<string, value_type> field numbered 1 of `message`, as protoc writes one: a repeated
    nested <Name>Entry message with options.map_entry."""
    entry = message.nested_type.add(name=name.capitalize() + "Entry")
    entry.field.extend([field("key", 1, Field.TYPE_STRING), field("value", 2, Field.TYPE_MESSAGE, value_type)])
    entry.options.map_entry = True
    message.field.append(field(name, 1, Field.TYPE_MESSAGE, f".tensorflow.{message.name}.{entry.name}", True))


def example_class():
    """The tensorflow.Example message class, built from TensorFlow's field numbers."""
    file = descriptor_pb2.FileDescriptorProto(name="tensorflow_example.proto", package="tensorflow", syntax="proto3")
    for name, kind in [("BytesList", Field.TYPE_BYTES), ("FloatList", Field.TYPE_FLOAT),
                       ("Int64List", Field.TYPE_INT64)]:
        file.message_type.add(name=name).field.append(field("value", 1, kind, repeated=True))  # packed in proto3
    feature = file.message_type.add(name="Feature")
    feature.oneof_decl.add(name="kind")
    for number, (name, type_name) in enumerate(
            [("bytes_list", "BytesList"), ("float_list", "FloatList"), ("int64_list", "Int64List")], start=1):
        feature.field.append(field(name, number, Field.TYPE_MESSAGE, f".tensorflow.{type_name}", oneof_index=0))
    map_field(file.message_type.add(name="Features"), "feature", ".tensorflow.Feature")
    example = file.message_type.add(name="Example")
    example.field.append(field("features", 1, Field.TYPE_MESSAGE, ".tensorflow.Features"))
    return message_factory.GetMessages([file])["tensorflow.Example"]


def read_records(path):
    """Every record of a plain TFRecord file, by TensorBoard's reader."""
    reader = pywrap_tensorflow.PyRecordReader_New(path, 0, None, None)
    records = []
    while True:
        try:
            reader.GetNext()
        except errors.OutOfRangeError:
            return records
        records.append(reader.record())


def same_floats(got, want):
    """Whether two float lists are equal as float32 bits (so NaN's sign, and -0, count)."""
    pack = lambda values: struct.pack(f"<{len(values)}f", *values)
    return len(got) == len(want) and pack(got) == pack(want)


def describe(kind, values):
    """`values` for a failure message: floats with their float32 bits, long bytes by length."""
    if kind is None:
        return "a Feature without a list"
    if kind == "float_list":
        shown = [f"{v} (0x{struct.pack('>f', v).hex()})" for v in values]
    else:
        shown = [f"<{len(v)} bytes>" if isinstance(v, bytes) and len(v) > 64 else repr(v) for v in values]
    text = ", ".join(shown)
    return f"{kind} [{text if len(text) < 600 else text[:600] + ' ...'}]"


def check_record(example, want, where):
    """Exits with a message unless `example` holds exactly `want` (see EXPECTED)."""
    if want is None:
        if example.HasField("features"):
            sys.exit(f"{where}: expected an Example without features, got {example}")
        return
    if not example.HasField("features"):
        sys.exit(f"{where}: the Example has no features field")
    features = example.features.feature
    if set(features) != set(want):
        sys.exit(f"{where}: features {sorted(features)}, expected {sorted(want)}")
    for name, (kind, values) in want.items():
        got_kind = features[name].WhichOneof("kind")
        got = list(getattr(features[name], got_kind).value) if got_kind else None
        same = got_kind == kind and (same_floats(got, values) if kind == "float_list" else got == values)
        if not same:
            sys.exit(f"{where}: feature '{name}' is {describe(got_kind, got)}, expected {describe(kind, values)}")


def check_file(path, name, example_class):
    """Exits with a message unless TensorBoard reads EXPECTED's records from `path` (shown as `name`)."""
    records = read_records(path)
    if len(records) != len(EXPECTED):
        sys.exit(f"{name}: TensorBoard read {len(records)} records, expected {len(EXPECTED)}")
    for index, (record, want) in enumerate(zip(records, EXPECTED)):
        check_record(example_class.FromString(record), want, f"{name}, record {index}")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    directory = sys.argv[1]
    example = example_class()
    plain_path = os.path.join(directory, "examples.tfrecord")
    check_file(plain_path, plain_path, example)
    # TensorBoard's compat reader refuses compressed files ("compression not supported by compat
    # reader"), so Python's gzip inflates the GZIP file first and TensorBoard reads the result.
    gzip_path = os.path.join(directory, "examples_gzip.tfrecord")
    with tempfile.TemporaryDirectory() as scratch:
        inflated = os.path.join(scratch, "examples_gzip_inflated.tfrecord")
        with gzip.open(gzip_path, "rb") as compressed, open(inflated, "wb") as plain:
            plain.write(compressed.read())
        check_file(inflated, f"{gzip_path} (inflated)", example)
    print(f"TensorBoard's reader and protobuf read the expected {len(EXPECTED)} Examples from "
          f"examples.tfrecord and examples_gzip.tfrecord in {directory}")


if __name__ == "__main__":
    main()
