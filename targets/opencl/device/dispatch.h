// How a dispatch step on an OpenCL device calls its kernel: the convention between the code the
// compiler puts in a package's "opencl-c" section and the OpenCL device that runs it.
//
// A dispatch step names a kernel of its code section (Step.kernel). The kernel takes, in order:
//   - for each input of the step, then each output: `__global T* data, ulong offset`, the
//     tensor's buffer and its byte offset in it (an absent optional input: a null buffer);
//   - for each of the step's dims (Step.dims, evaluated when the step runs): `long`.
// The first dims are the launch grid, one per dimension of the attribute "local" (the work-group
// size, fixed when the code was made: each distinct local size costs some drivers a compile), or
// the first dim alone when the step has no "local" (the driver picks). The grid is rounded up to
// a multiple of the local size, so a kernel compares its global id with its dims. A grid dim of 0
// launches nothing.
//
// A step with the attribute "checked" (true) checks its data (indices against the dims they
// index) and takes two more parameters after its dims: `__global int* q_err, int q_seq`. The
// first work-item of the run to meet a bad index claims the word (atomic_cmpxchg(q_err, 0,
// q_seq) == 0) and writes what is wrong as an int at byte offset 4 (0: an index out of bounds,
// 1: an empty axis that padding reads from), the index and the size it indexes as longs at byte
// offsets 8 and 16;
// the device gives every checked launch of a run its own q_seq (from 1) and one such word per
// run, and when the run's queue finishes it fails the run naming the step that claimed it. So a
// bad index is an error, as on the CPU, never a quiet read of some other element.
#pragma once

namespace quilt::rt {

inline constexpr const char* kDispatchLocalAttr = "local";
inline constexpr const char* kDispatchCheckedAttr = "checked";
// The error word's bytes: q_seq (int), what is wrong (int), the index (long), the size (long).
inline constexpr size_t kDispatchErrorBytes = 24;

// Options every OpenCL program is built with. Where the device can, division and sqrt are also
// correctly rounded (-cl-fp32-correctly-rounded-divide-sqrt), as on the CPU: OpenCL allows them
// 2.5 and 3 ulp otherwise, which GPU drivers use, and a quantization scale one ulp off moves
// values across a rounding step.
inline constexpr const char* kBuildOptions = "-cl-std=CL1.2 -cl-mad-enable";
inline constexpr const char* kCorrectlyRoundedDivideSqrt =
    " -cl-fp32-correctly-rounded-divide-sqrt";

}  // namespace quilt::rt
