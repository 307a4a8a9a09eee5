"""Writes tensorflow_ids.inc, the ids that TensorFlow's own categorical feature columns give,
for the tests of estimator/feature_columns/ (tests/estimator/feature_columns/*_test.cc).

Run once, by hand, with TensorFlow 2.15 (tensorflow-cpu 2.15.1 was used; CI does not run it):

    build/tf-venv/bin/python tests/estimator/feature_columns/make_tensorflow_ids.py

Every input batch is written to the file too (kStringInputs, kIntInputs, kNumericInputs), and
each case names its inputs and parameters, so the C++ tests build the same columns over the
same values and compare every id exactly. Ids come from the columns' get_sparse_tensors (and
transform_feature for a bucketized column's plain buckets), run eagerly; string fingerprints
from string_to_hash_bucket_fast. Rerunning it rewrites an identical file.
"""

import os
import tempfile

import numpy as np
import tensorflow as tf
from tensorflow.python.feature_column import feature_column_v2 as fc
from tensorflow.python.ops import sparse_ops

# Raw batches. A "sparse" batch reaches the columns as a SparseTensor (a VarLen feature), a
# "dense" one as a dense [batch, k] tensor (a FixedLen feature).
STRING_INPUTS = {
    "words": ([["a", "b", "c"], [], ["hello"], ["", "\u00fcn\u00efc\u00f8d\u00e9", "\u65e5\u672c\u8a9e"],
               ["x" * 1000], [" ", "a b", "tab\there", "\x00nul", "c\r"]], False),
    "dense_words": ([["a", ""], ["", ""], ["b", "c"], ["hello", "\u65e5\u672c\u8a9e"]], True),
    "cross_words": ([["a", "b"], [], ["\u65e5\u672c\u8a9e"], ["x", "y", "z"]], False),
    "cross_dense_words": ([["p", ""], ["q", "r"], ["", ""], ["s", "t"]], True),
}
INT_INPUTS = {
    "numbers": ([[0, 1, -1], [], [7], [-123456789012, 2**63 - 1, -2**63], [42, 5, 3, 1099511627776]], False),
    "dense_numbers": ([[1, -1], [-1, -1], [3, 4]], True),
    "small_numbers": ([[0, 1, 2], [], [4], [5, -1, 100], [3]], False),
    "in_range": ([[0, 4], [], [2, 2, 3]], False),
    "cross_numbers": ([[1, 2, 3], [5], [-7], [0, 1099511627776]], False),
    "cross_dense_numbers": ([[1, -1], [2, 3], [-1, -1], [0, 9]], True),
}
NAN, INF = float("nan"), float("inf")
# Numeric batches [batch, k] and their dtype.
NUMERIC_INPUTS = {
    "scalars32": ([[-5.0], [-1.0], [-0.5], [0.0], [0.1], [0.5], [9.999999], [10.0], [11.0], [1e30], [NAN], [-INF],
                   [INF], [-0.0], [0.09999999]], "float32"),
    "scalars64": ([[-5.0], [-1.0], [-0.5], [0.0], [0.1], [0.5], [9.999999], [10.0], [11.0], [1e30], [NAN], [-INF],
                   [INF], [-0.0], [0.1000000001]], "float64"),
    "triples": ([[-2.0, 0.0, 0.5], [1.0, 10.0, 100.0], [0.1, -1.0, -1.0000001]], "float32"),
    "integers": ([[-3], [-1], [0], [1], [10], [11], [2**40]], "int64"),
    "cross_pairs": ([[-1.0, 5.0], [0.5, 20.0], [3.0, 3.0], [100.0, -100.0]], "float32"),
}
DTYPES = {"float32": tf.float32, "float64": tf.float64, "int64": tf.int64}

FINGERPRINT_STRINGS = ["", "a", "b", "hello", "\u65e5\u672c\u8a9e", "\x00", "x" * 1000, "0", "-1",
                       "9223372036854775807", "The quick brown fox jumps over the lazy dog"]

BOUNDARIES = [-1.0, 0.0, 0.1, 0.5, 10.0]
VOCABULARY = ["hello", "a", "\u65e5\u672c\u8a9e", "", "c"]
INT_VOCABULARY = [7, 0, -1, 42, 2**40]
# The vocabularies of the crossed columns' vocabulary parts, by the kind of input.
CROSS_VOCABULARY = ["a", "x", "\u65e5\u672c\u8a9e"]
CROSS_INT_VOCABULARY = [1, 5, 0]
VOCABULARY_FILES = {
    "words_file": "hello\na\n\u65e5\u672c\u8a9e\nc\r\nb\n",
    "unterminated_file": "hello\na",
    "numbers_file": "7\n0\n-1\n42\n1099511627776\n",
}

def string_feature(name):
    rows, dense = STRING_INPUTS[name]
    if dense:
        return tf.constant([[v.encode("utf-8") for v in row] for row in rows], tf.string)
    return tf.ragged.constant([[v.encode("utf-8") for v in row] for row in rows], tf.string,
                              ragged_rank=1).to_sparse()

def int_feature(name):
    rows, dense = INT_INPUTS[name]
    if dense:
        return tf.constant(rows, tf.int64)
    return tf.ragged.constant(rows, tf.int64, ragged_rank=1).to_sparse()

def numeric_feature(name):
    rows, dtype = NUMERIC_INPUTS[name]
    if dtype == "int64":
        return tf.constant(rows, tf.int64)
    # Rounded from float64, as the C++ test rounds them.
    return tf.cast(tf.constant(np.array(rows, dtype=np.float64), tf.float64), DTYPES[dtype])

def feature(name):
    if name in STRING_INPUTS:
        return string_feature(name)
    if name in INT_INPUTS:
        return int_feature(name)
    return numeric_feature(name)

def rows_of(sparse):
    rows = [[] for _ in range(int(sparse.dense_shape[0]))]
    for (row, _), value in zip(sparse.indices.numpy().tolist(), sparse.values.numpy().tolist()):
        rows[row].append(int(value))
    return rows

def sparse_ids(column, features):
    cache = fc.FeatureTransformationCache(features)
    return rows_of(column.get_sparse_tensors(cache, None).id_tensor)

def full_uint64(modulo_of):
    """A uint64 h from h % (2**63 - 1) and h % 3 (2**63 - 1 is 1 modulo 3, so h % 3 picks j)."""
    remainder, mod3 = modulo_of(2**63 - 1), modulo_of(3)
    for j in range(3):
        candidate = remainder + j * (2**63 - 1)
        if candidate < 2**64 and candidate % 3 == mod3:
            return candidate
    raise AssertionError("no uint64 fits")

def fingerprint(value):
    data = tf.constant([value.encode("utf-8")])
    return full_uint64(lambda n: int(tf.strings.to_hash_bucket_fast(data, n).numpy()[0]))

def raw_cross(hash_key, features):
    inputs = [tf.constant([[f]], tf.int64) for f in features]
    def modulo(n):
        # num_buckets 0 gives the hash % INT64_MAX; otherwise the hash % num_buckets.
        out = sparse_ops.sparse_cross_hashed(inputs, num_buckets=0 if n == 2**63 - 1 else n, hash_key=hash_key)
        return int(out.values.numpy()[0])
    return full_uint64(modulo)

def c_string(value):
    data = value.encode("utf-8") if isinstance(value, str) else value
    out = []
    for byte in data:
        char = chr(byte)
        if (char.isascii() and char.isalnum()) or char in " _-.,:;!<>()[]{}=+*/'":
            out.append(char)
        else:
            out.append("\\%03o" % byte)
    return 'S("%s", %d)' % ("".join(out), len(data))

def c_rows(rows):
    return "{" + ", ".join("{" + ", ".join(str(int(v)) for v in row) + "}" for row in rows) + "}"

def c_int(value):
    return "INT64_MIN" if value == -2**63 else "%dLL" % value

def c_double(value):
    if value != value:
        return "kNaN"
    if value in (INF, -INF):
        return "kInf" if value > 0 else "-kInf"
    return repr(float(value))

def main():
    out = ["// Written by make_tensorflow_ids.py with TensorFlow %s; do not edit." % tf.__version__]

    out.append("inline const StringInput kStringInputs[] = {")
    for name, (rows, dense) in STRING_INPUTS.items():
        cells = ", ".join("{" + ", ".join(c_string(v) for v in row) + "}" for row in rows)
        out.append('    {"%s", {%s}, %s},' % (name, cells, "true" if dense else "false"))
    out.append("};")
    out.append("inline const IntInput kIntInputs[] = {")
    for name, (rows, dense) in INT_INPUTS.items():
        cells = ", ".join("{" + ", ".join(c_int(v) for v in row) + "}" for row in rows)
        out.append('    {"%s", {%s}, %s},' % (name, cells, "true" if dense else "false"))
    out.append("};")
    out.append("inline const NumericInput kNumericInputs[] = {")
    for name, (rows, dtype) in NUMERIC_INPUTS.items():
        cells = ", ".join("{" + ", ".join(c_double(v) for v in row) + "}" for row in rows)
        out.append('    {"%s", {%s}, "%s"},' % (name, cells, dtype))
    out.append("};")

    out.append("// {string, TensorFlow's Fingerprint64}")
    out.append("inline const FingerprintValue kFingerprints[] = {")
    for value in FINGERPRINT_STRINGS:
        out.append("    {%s, %dULL}," % (c_string(value), fingerprint(value)))
    out.append("};")

    out.append("// {hash_key, features, the uint64 SparseCross chains from them}")
    out.append("inline const RawCross kRawCrosses[] = {")
    for hash_key, features in [(0xDECAFCAFFE, [1, 2]), (0xDECAFCAFFE, [0, 0]), (1, [-1, 5]), (42, [7, -7, 2**40]),
                               (0xDECAFCAFFE, [fingerprint("a") - 2**64, 3])]:
        out.append("    {%dULL, {%s}, %dULL}," % (hash_key, ", ".join(c_int(f) for f in features),
                                                 raw_cross(hash_key, features)))
    out.append("};")

    out.append("// {input, hash_bucket_size, ids}")
    out.append("inline const HashBucketCase kHashBucketCases[] = {")
    for name in ["words", "dense_words", "numbers", "dense_numbers"]:
        dtype = tf.string if name in STRING_INPUTS else tf.int64
        for size in [1, 7, 1000, 2**20]:
            column = tf.feature_column.categorical_column_with_hash_bucket(name, size, dtype=dtype)
            out.append('    {"%s", %d, %s},' % (name, size, c_rows(sparse_ids(column, {name: feature(name)}))))
    out.append("};")

    out.append("// {input, vocabulary (strings), vocabulary (integers), num_oov_buckets, default_value, ids}")
    out.append("inline const VocabularyListCase kVocabularyListCases[] = {")
    for name in ["words", "dense_words"]:
        for oov, default in [(0, -1), (0, 7), (3, -1), (1, -1)]:
            column = tf.feature_column.categorical_column_with_vocabulary_list(
                name, VOCABULARY, default_value=default, num_oov_buckets=oov)
            out.append('    {"%s", {%s}, {}, %d, %d, %s},' % (
                name, ", ".join(c_string(v) for v in VOCABULARY), oov, default,
                c_rows(sparse_ids(column, {name: feature(name)}))))
    for name in ["numbers", "dense_numbers"]:
        for oov, default in [(0, -1), (0, 99), (5, -1)]:
            column = tf.feature_column.categorical_column_with_vocabulary_list(
                name, INT_VOCABULARY, dtype=tf.int64, default_value=default, num_oov_buckets=oov)
            out.append('    {"%s", {}, {%s}, %d, %d, %s},' % (
                name, ", ".join(c_int(v) for v in INT_VOCABULARY), oov, default,
                c_rows(sparse_ids(column, {name: feature(name)}))))
    out.append("};")

    out.append("// {file, input, vocabulary_size (0: every line), num_oov_buckets, default_value, ids}")
    out.append("inline const VocabularyFileCase kVocabularyFileCases[] = {")
    out_files = ["inline const VocabularyFile kVocabularyFiles[] = {"]
    with tempfile.TemporaryDirectory() as directory:
        for file_name, contents in VOCABULARY_FILES.items():
            out_files.append('    {"%s", %s},' % (file_name, c_string(contents)))
            path = os.path.join(directory, file_name + ".txt")
            with open(path, "wb") as f:
                f.write(contents.encode("utf-8"))
            integer = file_name == "numbers_file"
            inputs = ["numbers", "dense_numbers"] if integer else ["words", "dense_words"]
            for name in inputs:
                for size, oov, default in [(None, 0, None), (3, 0, None), (None, 2, None), (2, 4, None),
                                           (None, 0, 5)]:
                    if file_name == "unterminated_file" and size == 3:
                        continue
                    column = tf.feature_column.categorical_column_with_vocabulary_file(
                        name, path, vocabulary_size=size, num_oov_buckets=oov, default_value=default,
                        dtype=tf.int64 if integer else tf.string)
                    out.append('    {"%s", "%s", %d, %d, %d, %s},' % (
                        file_name, name, size or 0, oov, -1 if default is None else default,
                        c_rows(sparse_ids(column, {name: feature(name)}))))
    out.append("};")
    out_files.append("};")
    out.extend(out_files)

    out.append("// {input, num_buckets, default_value (-1: none), ids}")
    out.append("inline const IdentityCase kIdentityCases[] = {")
    for name, buckets, default in [("small_numbers", 5, 0), ("small_numbers", 200, 7), ("in_range", 5, None),
                                   ("dense_numbers", 10, None), ("dense_numbers", 4, 2)]:
        column = tf.feature_column.categorical_column_with_identity(name, buckets, default_value=default)
        out.append('    {"%s", %d, %d, %s},' % (name, buckets, -1 if default is None else default,
                                               c_rows(sparse_ids(column, {name: feature(name)}))))
    out.append("};")

    out.append("// {input, boundaries, ids (with each element's offset), plain buckets}")
    out.append("inline const BucketizedCase kBucketizedCases[] = {")
    for name, boundaries in [("scalars32", BOUNDARIES), ("scalars64", BOUNDARIES), ("triples", BOUNDARIES),
                             ("integers", [-1.0, 0.0, 0.5, 10.0]), ("triples", [0.0])]:
        rows, dtype = NUMERIC_INPUTS[name]
        source = tf.feature_column.numeric_column(name, shape=(len(rows[0]),), dtype=DTYPES[dtype])
        column = tf.feature_column.bucketized_column(source, boundaries)
        features = {name: feature(name)}
        plain = column.transform_feature(fc.FeatureTransformationCache(features), None).numpy().tolist()
        out.append('    {"%s", {%s}, %s, %s},' % (name, ", ".join(c_double(b) for b in boundaries),
                                                 c_rows(sparse_ids(column, features)), c_rows(plain)))
    out.append("};")

    # Crossed columns: each part is a raw feature or a categorical column over one input (TensorFlow
    # refuses hash-bucket columns in crosses).
    def part(kind, name, parameter=0):
        if kind in ("string", "int"):
            return name, '{"%s", "%s", 0}' % (kind, name)
        if kind == "bucketized":
            source = tf.feature_column.numeric_column(name, shape=(len(NUMERIC_INPUTS[name][0][0]),))
            return (tf.feature_column.bucketized_column(source, [0.0, 1.0, 10.0]),
                    '{"bucketized", "%s", 0}' % name)
        if kind == "vocabulary":
            integer = name in INT_INPUTS
            return (tf.feature_column.categorical_column_with_vocabulary_list(
                name, CROSS_INT_VOCABULARY if integer else CROSS_VOCABULARY, dtype=tf.int64 if integer else tf.string,
                num_oov_buckets=parameter), '{"vocabulary", "%s", %d}' % (name, parameter))
        raise ValueError(kind)

    crosses = [
        ([("string", "cross_words"), ("int", "cross_numbers")], 1000, None),
        ([("int", "cross_numbers"), ("string", "cross_words")], 2**20, None),
        ([("string", "cross_words"), ("int", "cross_numbers")], 1, None),
        ([("string", "cross_words"), ("int", "cross_numbers")], 1000, 42),
        ([("string", "cross_words"), ("vocabulary", "cross_numbers", 3), ("bucketized", "cross_pairs")], 1000, None),
        ([("bucketized", "cross_pairs"), ("vocabulary", "cross_words", 2), ("int", "cross_numbers")], 2**20, None),
        ([("string", "cross_dense_words"), ("string", "cross_words")], 1000, None),
        ([("int", "cross_dense_numbers"), ("string", "cross_words"), ("bucketized", "cross_pairs")], 7, None),
    ]
    out.append("// {parts {kind, input, parameter}, hash_bucket_size, hash_key (0: default), ids}")
    out.append("inline const CrossCase kCrossCases[] = {")
    for parts, size, hash_key in crosses:
        built = [part(*p) for p in parts]
        column = tf.feature_column.crossed_column([b[0] for b in built], size, hash_key=hash_key)
        features = {p[1]: feature(p[1]) for p in parts}
        out.append("    {{%s}, %d, %dULL, %s}," % (", ".join(b[1] for b in built), size, hash_key or 0,
                                                  c_rows(sparse_ids(column, features))))
    out.append("};")

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tensorflow_ids.inc")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
