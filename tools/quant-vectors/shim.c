// Link stubs and exported conversions so ggml-quants.c can be loaded on its own (ctypes).
// Only used to generate the reference vectors of crates/lacuna-quant/tests/data.
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "ggml-impl.h"

void ggml_abort(const char *file, int line, const char *fmt, ...) {
    fprintf(stderr, "ggml_abort %s:%d\n", file, line);
    abort();
}
size_t ggml_row_size(enum ggml_type type, int64_t ne) { (void)type; (void)ne; abort(); }
const char *ggml_type_name(enum ggml_type type) { (void)type; return "?"; }
size_t ggml_type_size(enum ggml_type type) { (void)type; abort(); }

void shim_fp32_to_fp16(const float *x, uint16_t *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = GGML_FP32_TO_FP16(x[i]);
}
void shim_fp16_to_fp32(const uint16_t *x, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = GGML_FP16_TO_FP32(x[i]);
}
void shim_fp32_to_bf16(const float *x, uint16_t *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = GGML_FP32_TO_BF16(x[i]).bits;
}
void shim_bf16_to_fp32(const uint16_t *x, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        ggml_bf16_t h = { x[i] };
        y[i] = GGML_BF16_TO_FP32(h);
    }
}
