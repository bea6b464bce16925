/* quilt runtime C API: load a compiled package, create a session, run it.
 *
 *   quilt_package_t* pkg = NULL;
 *   quilt_status_t* st = quilt_package_load_file("model.quilt", &pkg);
 *   if (st) { fprintf(stderr, "%s\n", quilt_status_message(st)); quilt_status_free(st); ... }
 *   quilt_session_t* session = NULL;
 *   st = quilt_session_create(pkg, NULL, &session);            // NULL: default options
 *   int64_t shape[4] = {1, 3, 48, 192};
 *   quilt_tensor_t input = {"x", QUILT_DTYPE_F32, 4, shape, pixels, sizeof(pixels)};
 *   quilt_outputs_t* outputs = NULL;
 *   st = quilt_session_run(session, &input, 1, &outputs);
 *   quilt_tensor_t out;
 *   quilt_outputs_get(outputs, 0, &out);                       // out.data valid until freed
 *   quilt_outputs_free(outputs);
 *   quilt_session_free(session);
 *   quilt_package_free(pkg);
 *
 * Every fallible call returns a status: NULL means success; otherwise the caller owns the status
 * and frees it with quilt_status_free. No call throws. A session may be run from many threads
 * at once; each run has its own workspace. A package must outlive the sessions made from it.
 */
#ifndef QUILT_QUILT_H_
#define QUILT_QUILT_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define QUILT_API __attribute__((visibility("default")))
#else
#define QUILT_API
#endif

/* Element types: ONNX's TensorProto.DataType numbering. */
typedef enum quilt_dtype {
  QUILT_DTYPE_F32 = 1,
  QUILT_DTYPE_U8 = 2,
  QUILT_DTYPE_I8 = 3,
  QUILT_DTYPE_U16 = 4,
  QUILT_DTYPE_I16 = 5,
  QUILT_DTYPE_I32 = 6,
  QUILT_DTYPE_I64 = 7,
  QUILT_DTYPE_BOOL = 9,
  QUILT_DTYPE_F16 = 10,
  QUILT_DTYPE_F64 = 11,
  QUILT_DTYPE_U32 = 12,
  QUILT_DTYPE_U64 = 13,
  QUILT_DTYPE_BF16 = 16
} quilt_dtype_t;

typedef struct quilt_status quilt_status_t;
typedef struct quilt_package quilt_package_t;
typedef struct quilt_session quilt_session_t;
typedef struct quilt_outputs quilt_outputs_t;

/* A tensor passed in or read out. Input tensors are borrowed for the duration of the run. */
typedef struct quilt_tensor {
  const char* name;
  int32_t dtype; /* a quilt_dtype_t value */
  int32_t rank;
  const int64_t* shape; /* rank entries */
  const void* data;     /* row-major elements, aligned to the element's size (at most 8): a
                           float32 input at a multiple of 4 bytes, an int64 one of 8 */
  size_t byte_size;
} quilt_tensor_t;

/* One input or output of a model as the package declares it. Symbolic dims are -1, with their
 * names in dim_names (NULL for static dims). rank is -1 when unknown. Pointers stay valid while
 * the session lives. */
typedef struct quilt_tensor_info {
  const char* name;
  int32_t dtype;
  int32_t rank;
  const int64_t* dims;
  const char* const* dim_names;
  int has_default; /* an input the caller may omit */
} quilt_tensor_info_t;

/* Zero-initialize, then set what you need: 0 in a field means its default. */
typedef struct quilt_session_options {
  int32_t threads;     /* threads per run; 0 means 1 */
  const char* devices; /* comma-separated device kinds the session may use ("cpu"); NULL: all */
  int32_t max_threads; /* limit on |threads|: 0 means 256 */
  int64_t max_loop_iterations; /* iterations of one Loop in a run: 0 means 10,000,000 */
  int64_t max_arena_bytes;     /* a device arena the package plans: 0 means 64 GiB */
  int32_t max_workers;         /* worker threads of all concurrent runs: 0 means 1024; a run past it
                                  computes on its calling thread */
  int64_t max_run_bytes;       /* bytes one run holds at once (arenas and values): 0 means 1 TiB */
  const char* code_cache_dir;  /* a folder where devices keep the binaries of the code they build
                                  (OpenCL programs), keyed by device, driver and source, so that a
                                  later session skips the build; NULL: none */
  int32_t strict;              /* nonzero: a device whose code does not load, or a portable
                                  package's accelerator absent here, fails the session instead of
                                  its steps running on the CPU */
} quilt_session_options_t;

/* What kind of failure a status is (NULL, success: QUILT_STATUS_OK). */
typedef enum quilt_status_code {
  QUILT_STATUS_OK = 0,
  QUILT_STATUS_ERROR = 1,
  QUILT_STATUS_CANCELLED = 2, /* the run's control was cancelled */
  QUILT_STATUS_LIMIT = 3      /* a limit of the session options was reached; the message names it */
} quilt_status_code_t;

/* A handle on runs in flight: quilt_run_control_cancel, from any thread, makes every run given
 * this control return QUILT_STATUS_CANCELLED before its next step. It stays cancelled. */
typedef struct quilt_run_control quilt_run_control_t;

QUILT_API const char* quilt_status_message(const quilt_status_t* status);
QUILT_API quilt_status_code_t quilt_status_code(const quilt_status_t* status);
QUILT_API void quilt_status_free(quilt_status_t* status);

/* The runtime's version ("0.1.0") and the package format it reads ("2.4"). */
QUILT_API const char* quilt_version(void);
QUILT_API const char* quilt_package_format_version(void);

/* Reads the file into memory the package owns and verifies its checksum; |out_package| is owned
 * by the caller. The file may change or go once this returns. */
QUILT_API quilt_status_t* quilt_package_load_file(const char* path, quilt_package_t** out_package);
/* Copies |size| bytes from |data| and verifies their checksum; the caller may free them
 * afterwards. */
QUILT_API quilt_status_t* quilt_package_load_memory(const void* data, size_t size,
                                                    quilt_package_t** out_package);

/* Flags of quilt_package_load_file_flags (0: what quilt_package_load_file does). */
enum {
  /* Skip the checksum (one pass over the bytes): for packages verified before, on storage
   * nothing else writes. */
  QUILT_LOAD_SKIP_CHECKSUM = 1,
  /* Map the file instead of reading it: its pages are shared with the OS's file cache, but the
   * file must not change while the package lives (a write shows through; a truncation ends the
   * process with SIGBUS). */
  QUILT_LOAD_MAP_FILE = 2
};
QUILT_API quilt_status_t* quilt_package_load_file_flags(const char* path, unsigned flags,
                                                        quilt_package_t** out_package);
QUILT_API void quilt_package_free(quilt_package_t* package);

/* |options| may be NULL. The session keeps |package| alive internally. */
QUILT_API quilt_status_t* quilt_session_create(const quilt_package_t* package,
                                               const quilt_session_options_t* options,
                                               quilt_session_t** out_session);
QUILT_API void quilt_session_free(quilt_session_t* session);
QUILT_API size_t quilt_session_input_count(const quilt_session_t* session);
QUILT_API size_t quilt_session_output_count(const quilt_session_t* session);
QUILT_API quilt_status_t* quilt_session_input_info(const quilt_session_t* session, size_t index,
                                                   quilt_tensor_info_t* out_info);
QUILT_API quilt_status_t* quilt_session_output_info(const quilt_session_t* session, size_t index,
                                                    quilt_tensor_info_t* out_info);
/* What the session did differently from what the package asks, a line each: a device whose code
 * did not load, or an accelerator absent here from a portable package (quiltc --portable), whose
 * steps run on the CPU instead. NULL when |index| is out of range; valid while the session lives.
 */
QUILT_API size_t quilt_session_note_count(const quilt_session_t* session);
QUILT_API const char* quilt_session_note(const quilt_session_t* session, size_t index);

/* Runs the model on |inputs| (by name, any order; inputs with a default may be left out).
 * Thread-safe. |out_outputs| is owned by the caller. */
QUILT_API quilt_status_t* quilt_session_run(const quilt_session_t* session,
                                            const quilt_tensor_t* inputs, size_t num_inputs,
                                            quilt_outputs_t** out_outputs);
/* The same, cancellable through |control| (may be NULL). */
QUILT_API quilt_status_t* quilt_session_run_with(const quilt_session_t* session,
                                                 const quilt_tensor_t* inputs, size_t num_inputs,
                                                 const quilt_run_control_t* control,
                                                 quilt_outputs_t** out_outputs);
QUILT_API quilt_run_control_t* quilt_run_control_create(void);
QUILT_API void quilt_run_control_cancel(quilt_run_control_t* control);
/* A time budget: cancels the runs given |control| that are still going |milliseconds| from now. */
QUILT_API void quilt_run_control_cancel_after(quilt_run_control_t* control, int64_t milliseconds);
QUILT_API void quilt_run_control_free(quilt_run_control_t* control);

QUILT_API size_t quilt_outputs_count(const quilt_outputs_t* outputs);
/* |out_tensor| points into |outputs|: valid until quilt_outputs_free, which may come after
 * quilt_session_free. */
QUILT_API quilt_status_t* quilt_outputs_get(const quilt_outputs_t* outputs, size_t index,
                                            quilt_tensor_t* out_tensor);
QUILT_API void quilt_outputs_free(quilt_outputs_t* outputs);

#ifdef __cplusplus
}
#endif

#endif /* QUILT_QUILT_H_ */
