// Hostile tensor files: sizes a .npy header, a zip directory or a TensorProto declares that the
// bytes present cannot back. Each is a message naming the file, before anything of the declared
// size is allocated, and never an abort.
#include <gtest/gtest.h>
#include <zlib.h>

#include <string>
#include <vector>

#include "tests/tools/tool_runner.h"
#include "tests/tools/tool_test_util.h"
#include "tools/tensor_io.h"

namespace {

using quilt::testing::NpyWithHeader;
using quilt::testing::RunTool;
using quilt::testing::StoredZip;
using quilt::testing::ToolResult;

class TensorFiles : public quilt::testing::ToolTest {
 protected:
  // The error ReadNpy gives for a .npy with this header and data.
  std::string NpyError(const std::string& header, const std::string& data) {
    std::string path = Write("x.npy", NpyWithHeader(header, data));
    quilt::Expected<quilt::rt::OwnedTensor> t = quilt::tools::ReadNpy(path);
    EXPECT_FALSE(t) << header;
    return t ? "" : t.error().ToString();
  }
  std::string NpzError(const std::string& bytes) {
    std::string path = Write("x.npz", bytes);
    quilt::Expected<std::vector<quilt::rt::OwnedTensor>> t = quilt::tools::ReadNpz(path);
    EXPECT_FALSE(t);
    return t ? "" : t.error().ToString();
  }
  // quilt-run on a package with the file as input 'a': exit 1 with `message`.
  void ExpectRunRefuses(const std::string& file, const std::string& message) {
    if (!std::filesystem::exists(Path("m.quilt"))) {
      ASSERT_EQ(RunTool("quiltc", Model() + " -o " + Path("m.quilt")).code, 0);
    }
    ToolResult r = RunTool("quilt-run", Path("m.quilt") + " --input a=" + file);
    EXPECT_TRUE(r.FailedCleanly()) << r.Describe();
    EXPECT_EQ(r.code, 1) << r.Describe();
    EXPECT_NE(r.out.find(message), std::string::npos) << r.out;
  }
};

// A raw deflate stream of `bytes`, as zip members hold it.
std::string Deflate(const std::string& bytes) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 9, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, bytes.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

const char* const kTwoToTheSixty =
    "{'descr': '<f4', 'fortran_order': False, 'shape': (1073741824, 1073741824), }";

TEST_F(TensorFiles, NpyHeaderClaimingTwoToTheSixtyElementsIsRefused) {
  std::string e = NpyError(kTwoToTheSixty, std::string(8, '\0'));
  EXPECT_NE(e.find("x.npy: holds 8 data bytes, but the header's float32 (1073741824, 1073741824) "
                   "needs 4611686018427387904"),
            std::string::npos)
      << e;
  ExpectRunRefuses(Path("x.npy"), "holds 8 data bytes, but the header's float32");
}

TEST_F(TensorFiles, NpyShapeOverflowingSixtyFourBitsIsRefused) {
  std::string e = NpyError(
      "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4), }", "");
  EXPECT_NE(e.find("shape (4294967296, 4294967296, 4) has more elements than 64 bits can count"),
            std::string::npos)
      << e;
  e = NpyError("{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 1073741824), }", "");
  EXPECT_NE(e.find("float64 (4294967296, 1073741824) needs more bytes than 64 bits can count"),
            std::string::npos)
      << e;
}

TEST_F(TensorFiles, NpyShapeThatIsNotATupleOfCountsIsRefused) {
  for (const char* shape : {"(-2, 3)", "(2, x)", "", "(2, 3", "2", "(99999999999999999999,)"}) {
    std::string e =
        NpyError(std::string("{'descr': '<f4', 'fortran_order': False, 'shape': ") + shape + ", }",
                 std::string(24, '\0'));
    EXPECT_NE(e.find("the .npy header's shape '"), std::string::npos) << shape << ": " << e;
  }
  // No shape at all is no scalar either.
  std::string e = NpyError("{'descr': '<f4', 'fortran_order': False, }", std::string(4, '\0'));
  EXPECT_NE(e.find("is not a tuple of non-negative integers"), std::string::npos) << e;
}

TEST_F(TensorFiles, NpyStillReadsWhatNumpyWrites) {
  quilt::Expected<quilt::rt::OwnedTensor> t = quilt::tools::ReadNpy(
      Write("x.npy", NpyWithHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                                   std::string(24, '\1'))));
  ASSERT_TRUE(t) << t.error().ToString();
  EXPECT_EQ(t->shape, (quilt::rt::Shape{2, 3}));
  t = quilt::tools::ReadNpy(
      Write("s.npy",
            NpyWithHeader("{'descr': '<i8', 'fortran_order': False, 'shape': (), }", "12345678")));
  ASSERT_TRUE(t) << t.error().ToString();
  EXPECT_TRUE(t->shape.empty());
  t = quilt::tools::ReadNpy(Write(
      "e.npy", NpyWithHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 7), }", "")));
  ASSERT_TRUE(t) << t.error().ToString();
  EXPECT_EQ(t->shape, (quilt::rt::Shape{0, 7}));
}

// The directory says a deflated member of a few bytes inflates to 4 GiB: refused from the sizes
// alone, before the member is inflated or its claimed size allocated.
TEST_F(TensorFiles, NpzMemberClaimingMoreThanDeflateCanMakeIsRefused) {
  std::string npy = quilt::tools::NpyBytes(Floats({1, 2, 3}, {1, 3}));
  std::string zip = StoredZip({{"a.npy", Deflate(npy)}}, {0xfffffff0}, 8);
  std::string e = NpzError(zip);
  EXPECT_NE(e.find("x.npz:a.npy: the zip directory says 4294967280 bytes inflate from "),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("more than deflate can make"), std::string::npos) << e;
  ExpectRunRefuses(Path("x.npz"), "more than deflate can make");
}

// A size deflate could make, but not the one the member's own .npy header needs.
TEST_F(TensorFiles, NpzMemberWhoseHeaderDisagreesWithTheDirectoryIsRefused) {
  std::string npy = quilt::tools::NpyBytes(Floats({1, 2, 3}, {1, 3}));
  std::string zip = StoredZip({{"a.npy", Deflate(npy)}}, {npy.size() + 1000}, 8);
  std::string e = NpzError(zip);
  EXPECT_NE(e.find("x.npz:a.npy: the .npy header's float32 (1, 3) needs 12 data bytes, the zip "
                   "directory gives the member 1012"),
            std::string::npos)
      << e;
  // The true size reads.
  zip = StoredZip({{"a.npy", Deflate(npy)}}, {npy.size()}, 8);
  quilt::Expected<std::vector<quilt::rt::OwnedTensor>> t =
      quilt::tools::ReadNpz(Write("ok.npz", zip));
  ASSERT_TRUE(t) << t.error().ToString();
  ASSERT_EQ(t->size(), 1u);
  EXPECT_EQ((*t)[0].shape, (quilt::rt::Shape{1, 3}));
  EXPECT_EQ((*t)[0].data.size(), 12u);
}

TEST_F(TensorFiles, NpzMemberShorterOrLongerThanTheDirectorySaysIsRefused) {
  std::string npy = quilt::tools::NpyBytes(Floats({1, 2, 3}, {1, 3}));
  std::string stream = Deflate(npy);
  std::string e =
      NpzError(StoredZip({{"a.npy", stream.substr(0, stream.size() / 2)}}, {npy.size()}, 8));
  EXPECT_NE(e.find("x.npz:a.npy: "), std::string::npos) << e;
  // A stored member whose sizes disagree.
  e = NpzError(StoredZip({{"a.npy", npy}}, {npy.size() + 4}));
  EXPECT_NE(e.find("x.npz:a.npy: a stored member of " + std::to_string(npy.size()) +
                   " bytes, but the zip directory says " + std::to_string(npy.size() + 4)),
            std::string::npos)
      << e;
}

TEST_F(TensorFiles, NpzMemberWithAHugeHeaderShapeIsRefused) {
  std::string e = NpzError(StoredZip({{"a.npy", NpyWithHeader(kTwoToTheSixty, "12345678")}}));
  EXPECT_NE(e.find("x.npz:a.npy: holds 8 data bytes, but the header's float32"), std::string::npos)
      << e;
  std::string member = NpyWithHeader(kTwoToTheSixty, "");
  e = NpzError(StoredZip({{"a.npy", Deflate(member)}}, {member.size()}, 8));
  EXPECT_NE(e.find("needs 4611686018427387904 data bytes, the zip directory gives the member 0"),
            std::string::npos)
      << e;
}

// Offsets near 2^64 in a ZIP64 end record and in a member's ZIP64 extra field: sums that wrap
// must not pass as in range.
TEST_F(TensorFiles, ZipOffsetsNearTwoToTheSixtyFourAreRefused) {
  std::string npy = quilt::tools::NpyBytes(Floats({1, 2, 3}, {1, 3}));
  std::string zip = StoredZip({{"a.npy", npy}});
  // A ZIP64 locator before the end record, pointing its record at 2^64 - 16.
  std::string locator = "PK\x06\x07";
  locator += std::string(4, '\0');
  locator += std::string("\xf0\xff\xff\xff\xff\xff\xff\xff", 8);
  locator += std::string("\x01\x00\x00\x00", 4);
  std::string eocd = zip.substr(zip.size() - 22);
  eocd.replace(16, 4, "\xff\xff\xff\xff");
  std::string e = NpzError(zip.substr(0, zip.size() - 22) + locator + eocd);
  EXPECT_NE(e.find("x.npz: bad ZIP64 record"), std::string::npos) << e;
  ExpectRunRefuses(Path("x.npz"), "bad ZIP64 record");
}

TEST_F(TensorFiles, NpzDirectoryCountingMoreMembersThanItHoldsIsRefused) {
  std::string npy = quilt::tools::NpyBytes(Floats({1, 2, 3}, {1, 3}));
  std::string zip = StoredZip({{"a.npy", npy}});
  zip[zip.size() - 22 + 8] = '\xff', zip[zip.size() - 22 + 9] = '\xff';
  zip[zip.size() - 22 + 10] = '\xff', zip[zip.size() - 22 + 11] = '\xff';
  std::string e = NpzError(zip);
  EXPECT_NE(e.find("x.npz: bad zip directory (entry 1)"), std::string::npos) << e;
}

// TensorProto .pb inputs: dims whose bytes overflow 64 bits, and typed fields far shorter than
// their dims (which the reader would otherwise allocate in full first).
TEST_F(TensorFiles, TensorProtoDimsTheDataCannotBackAreRefused) {
  onnx::TensorProto t;
  t.set_name("a");
  t.set_data_type(onnx::TensorProto::INT64);
  t.add_dims(int64_t{1} << 31);
  t.add_dims(int64_t{1} << 31);
  t.set_raw_data("");
  std::string pb = Write("wrap.pb", t.SerializeAsString());
  quilt::Expected<quilt::rt::OwnedTensor> r = quilt::tools::ReadTensorPb(pb);
  ASSERT_FALSE(r);
  EXPECT_NE(
      r.error().ToString().find("wrap.pb: dims (2147483648, 2147483648): more than 2^50 elements"),
      std::string::npos)
      << r.error().ToString();

  onnx::TensorProto f;
  f.set_name("a");
  f.set_data_type(onnx::TensorProto::FLOAT);
  f.add_dims(int64_t{1} << 40);
  f.add_float_data(1.0f);
  pb = Write("short.pb", f.SerializeAsString());
  r = quilt::tools::ReadTensorPb(pb);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().ToString().find(
                "short.pb: holds 1 values, but dims (1099511627776,) need 1099511627776"),
            std::string::npos)
      << r.error().ToString();
  ExpectRunRefuses(pb, "holds 1 values, but dims (1099511627776,) need 1099511627776");

  f.set_raw_data(std::string(8, '\0'));
  f.clear_float_data();
  r = quilt::tools::ReadTensorPb(Write("raw.pb", f.SerializeAsString()));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().ToString().find("raw.pb: raw_data holds 8 bytes, but dims (1099511627776,) "
                                      "need 4398046511104"),
            std::string::npos)
      << r.error().ToString();
}

TEST_F(TensorFiles, TensorProtoThatFitsIsRead) {
  onnx::TensorProto f;
  f.set_name("x");
  f.set_data_type(onnx::TensorProto::FLOAT);
  f.add_dims(1);
  f.add_dims(3);
  for (float v : {3.f, 8.f, 15.f}) f.add_float_data(v);
  quilt::Expected<quilt::rt::OwnedTensor> r =
      quilt::tools::ReadTensorPb(Write("x.pb", f.SerializeAsString()));
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->name, "x");
  EXPECT_EQ(r->shape, (quilt::rt::Shape{1, 3}));
  ASSERT_EQ(RunTool("quiltc", Model() + " -o " + Path("m.quilt")).code, 0);
  std::string b = Npy("b.npy", {1, 1, 1}, {1, 3});
  ToolResult run =
      RunTool("quilt-run", Path("m.quilt") + " --input a=" + Path("x.pb") + " --input b=" + b);
  ASSERT_EQ(run.code, 0) << run.Describe();
  EXPECT_NE(run.out.find("y/out: float32 (1, 3) [4, 9, 16]"), std::string::npos) << run.out;
}

}  // namespace
