#!/bin/sh
# Records llama.cpp's token ids for every fixture vocabulary and the corpus, with and
# without special-token parsing, into crates/lacuna-tokenizer/tests/fixtures/*.json.
# CI compares against these files; it never rebuilds llama.cpp.
#   1. build the oracle:           tools/llama-oracle/build-ref.sh
#   2. (re)train the vocabularies: python3 tools/tokenizer-fixtures/train.py <corpus> <dir>
#   3. record:                     tools/tokenizer-fixtures/record.sh
set -e
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
ORACLE="$ROOT/tools/llama-oracle/target/release/llama-oracle"
FIX="$ROOT/crates/lacuna-tokenizer/tests/fixtures"
for gguf in "$FIX"/*.gguf; do
    name="$(basename "$gguf" .gguf)"
    "$ORACLE" tokenize --model "$gguf" --input "$FIX/corpus.json" --out "$FIX/$name.special.json"
    "$ORACLE" tokenize --model "$gguf" --input "$FIX/corpus.json" --out "$FIX/$name.plain.json" --no-special
    echo "recorded $name"
done
