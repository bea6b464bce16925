// LeakSanitizer's defaults for the OpenCL test binary (built into it under QUILT_SANITIZE): thread-
// local storage is left out of the roots (use_tls=0). PoCL unloads the kernel libraries it
// loaded, and LSan's record of their dynamic TLS then points at freed memory, which crashes its
// tracer at exit. Fewer roots can only report more leaks, never hide one.
extern "C" const char* __lsan_default_options() { return "use_tls=0"; }
