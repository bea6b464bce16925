// The C API and its C++ wrapper: statuses with messages, no exception across the boundary,
// outputs owned by the caller.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "quilt/quilt.h"
#include "quilt/quilt.hpp"
#include "targets/package_writer.h"
#include "tests/runtime/runtime_test_util.h"

namespace {

std::vector<uint8_t> AddPackage() {
  return quilt::compiler::WritePackage(quilt::test::AddConstantPackage());
}

TEST(CApi, LoadCreateRunRead) {
  std::vector<uint8_t> bytes = AddPackage();
  quilt_package_t* pkg = nullptr;
  ASSERT_EQ(quilt_package_load_memory(bytes.data(), bytes.size(), &pkg), nullptr);
  bytes.assign(bytes.size(), 0);  // the package keeps its own copy
  quilt_session_t* session = nullptr;
  ASSERT_EQ(quilt_session_create(pkg, nullptr, &session), nullptr);
  ASSERT_EQ(quilt_session_input_count(session), 1u);
  quilt_tensor_info_t info;
  ASSERT_EQ(quilt_session_input_info(session, 0, &info), nullptr);
  EXPECT_STREQ(info.name, "x");
  EXPECT_EQ(info.rank, 2);
  EXPECT_EQ(info.dims[0], -1);
  EXPECT_STREQ(info.dim_names[0], "n");
  EXPECT_EQ(info.dim_names[1], nullptr);
  float x[6] = {1, 1, 1, 2, 2, 2};
  int64_t shape[2] = {2, 3};
  quilt_tensor_t in = {"x", QUILT_DTYPE_F32, 2, shape, x, sizeof x};
  quilt_outputs_t* outs = nullptr;
  ASSERT_EQ(quilt_session_run(session, &in, 1, &outs), nullptr);
  ASSERT_EQ(quilt_outputs_count(outs), 1u);
  quilt_tensor_t y;
  ASSERT_EQ(quilt_outputs_get(outs, 0, &y), nullptr);
  EXPECT_STREQ(y.name, "y");
  ASSERT_EQ(y.byte_size, 24u);
  const float* v = static_cast<const float*>(y.data);
  EXPECT_EQ(v[0], 2.0f);
  EXPECT_EQ(v[5], 5.0f);
  quilt_outputs_free(outs);
  quilt_session_free(session);
  quilt_package_free(pkg);
}

// A portable package whose accelerator is absent: the session runs its steps on the CPU, and the
// C API says so in the session's notes; a strict session refuses it instead.
TEST(CApi, NotesSayWhereAPortablePackageRunsOnTheCpu) {
  quilt::compiler::PackageSpec spec = quilt::test::AddConstantPackage();
  spec.devices[0] = {"opencl -device=7", "opencl", 7, /*cpu_fallback=*/false};
  std::vector<uint8_t> bytes = quilt::compiler::WritePackage(spec);
  quilt_package_t* pkg = nullptr;
  ASSERT_EQ(quilt_package_load_memory(bytes.data(), bytes.size(), &pkg), nullptr);
  quilt_session_t* session = nullptr;
  quilt_status_t* st = quilt_session_create(pkg, nullptr, &session);
  ASSERT_NE(st, nullptr) << "no machine here has an eighth OpenCL device";
  EXPECT_NE(std::string(quilt_status_message(st)).find("device 'opencl -device=7'"),
            std::string::npos)
      << quilt_status_message(st);
  quilt_status_free(st);
  quilt_package_free(pkg);

  spec.devices[0].cpu_fallback = true;
  bytes = quilt::compiler::WritePackage(spec);
  ASSERT_EQ(quilt_package_load_memory(bytes.data(), bytes.size(), &pkg), nullptr);
  quilt_session_options_t strict{};
  strict.strict = 1;
  st = quilt_session_create(pkg, &strict, &session);
  ASSERT_NE(st, nullptr) << "strict: the absent accelerator fails the session";
  EXPECT_NE(std::string(quilt_status_message(st)).find("device 'opencl -device=7'"),
            std::string::npos)
      << quilt_status_message(st);
  quilt_status_free(st);
  st = quilt_session_create(pkg, nullptr, &session);
  ASSERT_EQ(st, nullptr) << quilt_status_message(st);
  ASSERT_EQ(quilt_session_note_count(session), 1u);
  std::string note = quilt_session_note(session, 0);
  EXPECT_EQ(note.find("device 0 ('opencl -device=7') is not available here ("), 0u) << note;
  EXPECT_NE(note.find("the package is portable: 1 steps run on the CPU instead"), std::string::npos)
      << note;
  EXPECT_EQ(quilt_session_note(session, 1), nullptr);
  EXPECT_EQ(quilt::test::RunThroughCApi(session, "x", {1, 1, 1}, {1, 3}),
            (std::vector<float>{2, 3, 4}));
  quilt_session_free(session);
  quilt_package_free(pkg);
}

TEST(CApi, ErrorsAreStatusesWithMessages) {
  quilt_package_t* pkg = nullptr;
  quilt_status_t* st = quilt_package_load_file("/nonexistent/model.quilt", &pkg);
  ASSERT_NE(st, nullptr);
  EXPECT_NE(std::string(quilt_status_message(st)).find("cannot open '/nonexistent/model.quilt'"),
            std::string::npos);
  quilt_status_free(st);
  EXPECT_EQ(pkg, nullptr);
  st = quilt_session_create(nullptr, nullptr, nullptr);
  ASSERT_NE(st, nullptr);
  quilt_status_free(st);
}

// quilt_package_load_file_flags: a damaged package is refused by its checksum unless the caller
// skips it; a mapped file loads as a read one does; unknown flags are refused. The format version
// is the one packages carry.
TEST(CApi, LoadFlags) {
  EXPECT_STREQ(quilt_package_format_version(), "2.4");
  std::vector<uint8_t> bytes = AddPackage();
  bytes[bytes.size() - 20] ^= 1;  // a byte of the data section's padding: damage, nothing else
  std::string path = ::testing::TempDir() + "/capi_flags.quilt";
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
  quilt_package_t* pkg = nullptr;
  quilt_status_t* st = quilt_package_load_file(path.c_str(), &pkg);
  ASSERT_NE(st, nullptr);
  EXPECT_NE(std::string(quilt_status_message(st)).find("its checksum does not match"),
            std::string::npos)
      << quilt_status_message(st);
  quilt_status_free(st);
  EXPECT_EQ(pkg, nullptr);
  for (unsigned flags : {unsigned{QUILT_LOAD_SKIP_CHECKSUM},
                         unsigned{QUILT_LOAD_SKIP_CHECKSUM | QUILT_LOAD_MAP_FILE}}) {
    ASSERT_EQ(quilt_package_load_file_flags(path.c_str(), flags, &pkg), nullptr) << flags;
    quilt_package_free(pkg);
  }
  st = quilt_package_load_file_flags(path.c_str(), 8, &pkg);
  ASSERT_NE(st, nullptr);
  EXPECT_NE(std::string(quilt_status_message(st)).find("unknown flags 8"), std::string::npos);
  quilt_status_free(st);
}

// Statuses say their kind: a run whose control was cancelled, a limit of the options, any other
// error; a cancelled control stops every run given it, and runs without it go on.
TEST(CApi, StatusCodesCancellationAndLimits) {
  std::vector<uint8_t> bytes = AddPackage();
  quilt_package_t* pkg = nullptr;
  ASSERT_EQ(quilt_package_load_memory(bytes.data(), bytes.size(), &pkg), nullptr);
  quilt_session_options_t options{};
  options.threads = 8;
  options.max_threads = 4;
  quilt_session_t* session = nullptr;
  quilt_status_t* st = quilt_session_create(pkg, &options, &session);
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(quilt_status_code(st), QUILT_STATUS_LIMIT);
  EXPECT_NE(std::string(quilt_status_message(st)).find("8 threads per run, past the limit of 4"),
            std::string::npos)
      << quilt_status_message(st);
  quilt_status_free(st);
  options.max_threads = 8;
  ASSERT_EQ(quilt_session_create(pkg, &options, &session), nullptr);
  float x[3] = {1, 1, 1};
  int64_t shape[2] = {1, 3};
  quilt_tensor_t in = {"x", QUILT_DTYPE_F32, 2, shape, x, sizeof x};
  quilt_run_control_t* control = quilt_run_control_create();
  quilt_outputs_t* outs = nullptr;
  ASSERT_EQ(quilt_session_run_with(session, &in, 1, control, &outs), nullptr);
  quilt_outputs_free(outs);
  quilt_run_control_cancel(control);
  st = quilt_session_run_with(session, &in, 1, control, &outs);
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(quilt_status_code(st), QUILT_STATUS_CANCELLED);
  EXPECT_NE(std::string(quilt_status_message(st)).find("the run was cancelled"), std::string::npos);
  quilt_status_free(st);
  ASSERT_EQ(quilt_session_run(session, &in, 1, &outs), nullptr);
  quilt_outputs_free(outs);
  in.name = "nope";
  st = quilt_session_run(session, &in, 1, &outs);
  EXPECT_EQ(quilt_status_code(st), QUILT_STATUS_ERROR);
  quilt_status_free(st);
  EXPECT_EQ(quilt_status_code(nullptr), QUILT_STATUS_OK);
  quilt_run_control_free(control);
  in.name = "x";
  control = quilt_run_control_create();
  quilt_run_control_cancel_after(control, 0);
  st = quilt_session_run_with(session, &in, 1, control, &outs);
  EXPECT_EQ(quilt_status_code(st), QUILT_STATUS_CANCELLED);
  quilt_status_free(st);
  quilt_run_control_free(control);
  quilt_session_free(session);
  quilt_package_free(pkg);
}

TEST(CApi, ByteSizeMustMatchDtypeAndShape) {
  std::vector<uint8_t> bytes = AddPackage();
  quilt_package_t* pkg = nullptr;
  ASSERT_EQ(quilt_package_load_memory(bytes.data(), bytes.size(), &pkg), nullptr);
  quilt_session_t* session = nullptr;
  ASSERT_EQ(quilt_session_create(pkg, nullptr, &session), nullptr);
  float x[6] = {};
  int64_t shape[2] = {2, 3};
  quilt_tensor_t in = {"x", QUILT_DTYPE_F32, 2, shape, x, 20};
  quilt_outputs_t* outs = nullptr;
  quilt_status_t* st = quilt_session_run(session, &in, 1, &outs);
  ASSERT_NE(st, nullptr);
  EXPECT_STREQ(quilt_status_message(st), "input 'x': 20 bytes given, its dtype and shape need 24");
  quilt_status_free(st);
  // 2^62 x 4 elements: a count that wraps to 0 in 64 bits must not pass for 0 bytes; nor may an
  // empty tensor whose other dims multiply past 64 bits (kernels compute strides from them).
  int64_t huge[2] = {int64_t{1} << 62, 4};
  int64_t empty_but_huge[2] = {0, int64_t{1} << 62};
  for (int64_t* dims : {huge, empty_but_huge}) {
    in = {"x", QUILT_DTYPE_F32, 2, dims, nullptr, 0};
    st = quilt_session_run(session, &in, 1, &outs);
    ASSERT_NE(st, nullptr);
    EXPECT_NE(std::string(quilt_status_message(st))
                  .find("has a dim past 2^50 or more than 2^50 elements, the most a tensor holds"),
              std::string::npos)
        << quilt_status_message(st);
    quilt_status_free(st);
  }
  // float32 elements at an address that is not a multiple of 4.
  alignas(8) unsigned char raw[32] = {};
  in = {"x", QUILT_DTYPE_F32, 2, shape, raw + 1, 24};
  st = quilt_session_run(session, &in, 1, &outs);
  ASSERT_NE(st, nullptr);
  EXPECT_STREQ(quilt_status_message(st),
               "input 'x' is not aligned to 4 bytes (its element's size)");
  quilt_status_free(st);
  in = {"x", QUILT_DTYPE_F32, 2, shape, raw + 4, 24};
  ASSERT_EQ(quilt_session_run(session, &in, 1, &outs), nullptr);
  quilt_outputs_free(outs);
  quilt_session_free(session);
  quilt_package_free(pkg);
}

TEST(CppApi, RunsAndThrowsOnErrors) {
  std::vector<uint8_t> bytes = AddPackage();
  quilt::Package package = quilt::Package::LoadMemory(bytes.data(), bytes.size());
  quilt::Session session(package);
  std::vector<float> x = {0, 0, 0};
  auto outs = session.Run({quilt::Input("x", x.data(), {1, 3})});
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_EQ(outs[0].Data<float>()[2], 3.0f);
  EXPECT_THROW(session.Run({quilt::Input("nope", x.data(), {1, 3})}), quilt::Exception);
  EXPECT_THROW(quilt::Package::LoadMemory("junk", 4), quilt::Exception);
  // Every option through the struct: a limit it breaks throws with the C API's message.
  quilt_session_options_t options{};
  options.threads = 3;
  options.max_threads = 2;
  try {
    quilt::Session limited(package, options);
    ADD_FAILURE() << "3 threads past a limit of 2 made a session";
  } catch (const quilt::Exception& e) {
    EXPECT_NE(std::string(e.what()).find("3 threads per run, past the limit of 2"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
