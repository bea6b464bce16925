// The parser of the text form (DESIGN "Text form"): TVMScript modules as TVM Relax writes them.
//
//   Expected<IRModule> mod = ParseModule(text, "model.qir");
//   if (!mod) std::cerr << mod.error().ToString();   // "model.qir:3:15: unknown op R.foo"
#pragma once

#include <string_view>

#include "ir/module.h"

namespace quilt::ir {

// Parses one `@I.ir_module class ...:` module. Errors carry "FILE:LINE:COL" (or "LINE:COL"
// when `filename` is empty) and say what was expected.
Expected<IRModule> ParseModule(std::string_view text, std::string_view filename = "");

// A target in either form: "cuda -arch=sm_80" or the dict TVM prints,
// {"kind": "cuda", "arch": "sm_80", "keys": ["cuda", "gpu"], "max_num_threads": 1024}.
Expected<Target> ParseTarget(std::string_view text);

}  // namespace quilt::ir
