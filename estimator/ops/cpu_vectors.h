#pragma once
// Which vector instructions the CPU kernels of est::ops may use. Internal to the ops and
// their tests.

namespace est::ops::detail {

/// The widest vectors this CPU has, within the cap of AllowVectorBits: 512 (AVX-512 F, BW
/// and VL), 256 (AVX2 with FMA) or 0 (none of these, or not x86-64).
int UsableVectorBits();

/// Caps UsableVectorBits at `bits` (512, the default, 256 or 0), so that tests cover each
/// kernel on a machine that has AVX-512.
void AllowVectorBits(int bits);

}  // namespace est::ops::detail
