/* duet_ext.h's 16-bit floating-point conversions: the reductions' own (duet_coll_dtype.h). */
#include "coll/duet_coll_dtype.h"
#include "duet/duet_ext.h"

float duet_ext_f16_to_f32(uint16_t h) { return duet_f16_to_f32(h); }
uint16_t duet_ext_f32_to_f16(float f) { return duet_f32_to_f16(f); }
float duet_ext_bf16_to_f32(uint16_t h) { return duet_bf16_to_f32(h); }
uint16_t duet_ext_f32_to_bf16(float f) { return duet_f32_to_bf16(f); }
