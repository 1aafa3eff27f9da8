//===- RuntimeTest.cpp - Unit tests of the blasst runtime -----------------===//
//
// Most tests exercise the pure validators and the no-driver path, and so run
// on any machine. Tests that need a GPU skip (with the reason) when
// deviceAvailable() says there is none. Set BLASST_TEST_CUBIN to a cubin of
// the kernel in kIotaPtx (ptxas -arch=sm_90a) to also test loading a cubin
// file.
//
//===----------------------------------------------------------------------===//

#include "blasst/Runtime/Runtime.h"
#include "TestStatus.h"

#include "../lib/Driver.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

using namespace blasst::rt;

namespace {

using blasst::rt::testing::failsWith;
using blasst::rt::testing::succeeds;

//===----------------------------------------------------------------------===//
// Status and explain()
//===----------------------------------------------------------------------===//

TEST(StatusTest, DefaultIsSuccess) {
  Status status;
  EXPECT_TRUE(status.ok());
  EXPECT_TRUE(static_cast<bool>(status));
  EXPECT_TRUE(status.message().empty());
  EXPECT_TRUE(Status::success().ok());
}

TEST(StatusTest, ErrorCarriesMessage) {
  Status status = Status::error("Q is a null pointer");
  EXPECT_FALSE(status.ok());
  EXPECT_FALSE(static_cast<bool>(status));
  EXPECT_EQ(status.message(), "Q is a null pointer");
  EXPECT_EQ(Status::error("").message(), "unspecified error");
}

TEST(ExplainTest, NamesTheOperationTheCodeAndItsMeaning) {
  EXPECT_EQ(explain(CUDA_ERROR_INVALID_IMAGE,
                    "cuModuleLoadData failed while loading kernel 'attn_fwd' "
                    "from cubin (1234 bytes)"),
            "cuModuleLoadData failed while loading kernel 'attn_fwd' from "
            "cubin (1234 bytes): CUDA_ERROR_INVALID_IMAGE (device kernel "
            "image is invalid)");
  EXPECT_EQ(explain(CUDA_ERROR_OUT_OF_MEMORY, std::string("allocating Q")),
            "allocating Q: CUDA_ERROR_OUT_OF_MEMORY (out of memory)");
}

TEST(ExplainTest, UnknownCodeIsReportedByNumber) {
  // 1000 is no CUresult value, yet within the enum's range (0..1023).
  std::string text = explain(static_cast<CUresult>(1000), "doing X");
  EXPECT_EQ(text.rfind("doing X: CUresult 1000", 0), 0u) << text;
}

TEST(ExplainTest, MissingWhatStillReadsWell) {
  EXPECT_EQ(
      explain(CUDA_ERROR_INVALID_VALUE, static_cast<const char *>(nullptr)),
      "CUDA driver call failed: CUDA_ERROR_INVALID_VALUE (invalid "
      "argument)");
}

TEST(ExplainTest, HintsAtTheUsualCause) {
  EXPECT_NE(explain(CUDA_ERROR_INVALID_CONTEXT, "x").find("Context::create"),
            std::string::npos);
  EXPECT_NE(explain(CUDA_ERROR_NO_BINARY_FOR_GPU, "x")
                .find("different GPU architecture"),
            std::string::npos);
}

TEST(ExplainTest, BuiltinTableCoversCommonCodes) {
  const char *name = nullptr, *description = nullptr;
  ASSERT_TRUE(detail::builtinErrorText(CUDA_ERROR_ILLEGAL_ADDRESS, &name,
                                       &description));
  EXPECT_STREQ(name, "CUDA_ERROR_ILLEGAL_ADDRESS");
  EXPECT_STREQ(description, "an illegal memory access was encountered");
  EXPECT_FALSE(detail::builtinErrorText(static_cast<CUresult>(1000), &name,
                                        &description));
}

//===----------------------------------------------------------------------===//
// No driver
//===----------------------------------------------------------------------===//

constexpr const char *kMissingLibrary = "libblasst-does-not-exist.so.1";

/// Points the runtime at a library that does not exist, as on a machine
/// without an NVIDIA driver, and restores the default afterwards.
class NoDriverTest : public ::testing::Test {
protected:
  void SetUp() override { setDriverLibraryForTesting(kMissingLibrary); }
  void TearDown() override { setDriverLibraryForTesting(nullptr); }
};

TEST_F(NoDriverTest, InitReportsTheMissingDriverClearly) {
  Status status = initDriver();
  ASSERT_FALSE(status.ok());
  const std::string prefix = std::string("blasst runtime: cannot load the CUDA "
                                         "driver (") +
                             kMissingLibrary + "): ";
  EXPECT_EQ(status.message().rfind(prefix, 0), 0u) << status.message();
  const std::string suffix = ". Is an NVIDIA driver installed?";
  ASSERT_GE(status.message().size(), prefix.size() + suffix.size());
  EXPECT_EQ(status.message().substr(status.message().size() - suffix.size()),
            suffix);
  // The dlerror() text sits between the two.
  EXPECT_GT(status.message().size(), prefix.size() + suffix.size());
  // The outcome is cached: the same answer again, no crash.
  EXPECT_EQ(initDriver().message(), status.message());
}

TEST_F(NoDriverTest, DeviceAvailableSaysNoAndWhy) {
  std::string why;
  EXPECT_FALSE(deviceAvailable(&why));
  EXPECT_NE(why.find("Is an NVIDIA driver installed?"), std::string::npos)
      << why;
  EXPECT_FALSE(deviceAvailable(nullptr));
  int count = -1;
  EXPECT_TRUE(failsWith(deviceCount(&count), "cannot load the CUDA driver"));
}

TEST_F(NoDriverTest, EveryDriverCallFailsWithTheSameMessage) {
  Context context;
  EXPECT_TRUE(
      failsWith(Context::create(0, &context), "cannot load the CUDA driver"));
  EXPECT_FALSE(context.valid());
  EXPECT_TRUE(failsWith(synchronize(nullptr), "cannot load the CUDA driver"));

  // Validation runs first and passes; then the driver is needed.
  CUtensorMap map;
  EXPECT_TRUE(
      failsWith(encodeTiled2D(&map, "Q", CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
                              0x10000, 128, 128, 256, 64, 64),
                "cannot load the CUDA driver"));
  // Invalid parameters are reported as such even without a driver.
  EXPECT_TRUE(
      failsWith(encodeTiled2D(&map, "Q", CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
                              0x10008, 128, 128, 256, 64, 64),
                "not 16-byte aligned"));
}

TEST_F(NoDriverTest, ObjectsThatWereNeverCreatedReportSo) {
  Context context;
  Module module;
  EXPECT_TRUE(failsWith(Module::loadData(context, "x", 2, "k", &module),
                        "the Context is not initialised"));
  Function function;
  EXPECT_TRUE(failsWith(module.getFunction("attn_fwd", &function),
                        "cannot look up kernel 'attn_fwd': the module is not "
                        "loaded"));
  std::vector<uint8_t> global;
  EXPECT_TRUE(failsWith(module.readGlobal("blasst_stamps", &global),
                        "cannot read global 'blasst_stamps': the module is "
                        "not loaded"));
  EXPECT_TRUE(failsWith(launch(function, 1, 128, 0, nullptr, nullptr),
                        "the Function is not looked up"));
  EXPECT_TRUE(failsWith(function.setMaxDynamicSharedMemory(1024),
                        "the Function is not looked up"));
  DeviceBuffer buffer;
  EXPECT_TRUE(failsWith(DeviceBuffer::allocate(context, 64, "Q", &buffer),
                        "the Context is not initialised"));
  EXPECT_TRUE(failsWith(buffer.copyFromHost("abc", 3),
                        "cannot copy into buffer '': it is not allocated"));
  EventTimer timer;
  EXPECT_TRUE(failsWith(EventTimer::create(context, &timer),
                        "the Context is not initialised"));
  EXPECT_TRUE(failsWith(timer.start(), "not created"));
  EXPECT_TRUE(failsWith(timer.stop(), "start() was not called"));
  float ms = 0;
  EXPECT_TRUE(failsWith(timer.elapsedMs(&ms), "call start() and stop()"));
  EXPECT_TRUE(failsWith(context.makeCurrent(), "not initialised"));
}

TEST_F(NoDriverTest, ExplainWorksWithoutADriver) {
  EXPECT_EQ(explain(CUDA_ERROR_NOT_FOUND, "looking up 'f'"),
            "looking up 'f': CUDA_ERROR_NOT_FOUND (named symbol not found)");
}

TEST(DriverLoadingTest, ALibraryThatIsNotLibcudaIsReported) {
  // libm exists everywhere but exports no cuInit.
  setDriverLibraryForTesting("libm.so.6");
  Status status = initDriver();
  setDriverLibraryForTesting(nullptr);
  EXPECT_TRUE(failsWith(status, "blasst runtime: the CUDA driver (libm.so.6) "
                                "has no entry point 'cuInit'"));
}

TEST(DriverLoadingTest, EnvironmentVariableChoosesTheLibrary) {
  const char *previous = std::getenv("BLASST_LIBCUDA");
  std::string saved = previous ? previous : "";
  ASSERT_EQ(setenv("BLASST_LIBCUDA", "libblasst-from-env.so", 1), 0);
  setDriverLibraryForTesting(nullptr); // Forget the cached outcome.
  Status status = initDriver();
  if (previous)
    setenv("BLASST_LIBCUDA", saved.c_str(), 1);
  else
    unsetenv("BLASST_LIBCUDA");
  setDriverLibraryForTesting(nullptr);
  EXPECT_TRUE(failsWith(status, "cannot load the CUDA driver "
                                "(libblasst-from-env.so)"));
}

//===----------------------------------------------------------------------===//
// Shared memory limit
//===----------------------------------------------------------------------===//

TEST(SharedMemoryTest, FitsUpToTheOptinLimit) {
  EXPECT_TRUE(succeeds(checkSharedMemoryLimit("attn_fwd", 0, 232448, 232448)));
  EXPECT_TRUE(
      succeeds(checkSharedMemoryLimit("attn_fwd", 1024, 231424, 232448)));
  EXPECT_TRUE(succeeds(checkSharedMemoryLimit("attn_fwd", 0, 0, 0)));
}

TEST(SharedMemoryTest, TooMuchIsReportedWithBothNumbers) {
  Status status = checkSharedMemoryLimit("attn_fwd", 0, 235520, 232448);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.message(), "kernel 'attn_fwd' needs 235520 bytes of shared "
                              "memory, device allows at most 232448");
}

TEST(SharedMemoryTest, StaticSharedMemoryCounts) {
  Status status = checkSharedMemoryLimit("attn_fwd", 4096, 231424, 232448);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.message(),
            "kernel 'attn_fwd' needs 235520 bytes of shared memory (4096 "
            "static + 231424 dynamic), device allows at most 232448");
}

TEST(SharedMemoryTest, HugeRequestsDoNotWrapAround) {
  EXPECT_TRUE(failsWith(checkSharedMemoryLimit("k", 4096, SIZE_MAX, 232448),
                        "device allows at most 232448"));
}

//===----------------------------------------------------------------------===//
// Launch configuration
//===----------------------------------------------------------------------===//

TEST(LaunchConfigTest, TypicalConfigurationsPass) {
  EXPECT_TRUE(succeeds(
      validateLaunchConfig("attn_fwd", Dim3(132), Dim3(384), 0, std::nullopt)));
  KernelLimits limits;
  limits.maxDynamicSharedBytes = 232448;
  EXPECT_TRUE(succeeds(validateLaunchConfig(
      "attn_fwd", Dim3(8, 32, 2), Dim3(128, 3), 200000, Dim3(2), limits)));
  EXPECT_TRUE(succeeds(validateLaunchConfig("k", Dim3(INT_MAX, 65535, 65535),
                                            Dim3(1024), 0, std::nullopt)));
  EXPECT_TRUE(succeeds(validateLaunchConfig("k", Dim3(16, 4, 2), Dim3(32, 32),
                                            0, Dim3(2, 2, 2))));
}

TEST(LaunchConfigTest, ZeroGridDimension) {
  EXPECT_TRUE(failsWith(
      validateLaunchConfig("attn_fwd", Dim3(0), Dim3(128), 0, std::nullopt),
      "launch of kernel 'attn_fwd': grid (0,1,1) has a zero dimension"));
  EXPECT_TRUE(failsWith(
      validateLaunchConfig("k", Dim3(4, 1, 0), Dim3(128), 0, std::nullopt),
      "grid (4,1,0) has a zero dimension"));
}

TEST(LaunchConfigTest, GridTooLarge) {
  EXPECT_TRUE(failsWith(
      validateLaunchConfig("k", Dim3(1u << 31), Dim3(128), 0, std::nullopt),
      "exceeds CUDA's limit of 2147483647 blocks in x"));
  EXPECT_TRUE(failsWith(
      validateLaunchConfig("k", Dim3(1, 65536), Dim3(128), 0, std::nullopt),
      "65535 blocks in y and z"));
}

TEST(LaunchConfigTest, BlockShape) {
  EXPECT_TRUE(
      failsWith(validateLaunchConfig("k", Dim3(1), Dim3(0), 0, std::nullopt),
                "block (0,1,1) has a zero dimension"));
  EXPECT_TRUE(
      failsWith(validateLaunchConfig("k", Dim3(1), Dim3(1025), 0, std::nullopt),
                "block (1025,1,1) exceeds CUDA's per-dimension limits"));
  EXPECT_TRUE(failsWith(
      validateLaunchConfig("k", Dim3(1), Dim3(1, 1, 65), 0, std::nullopt),
      "per-dimension limits"));
  EXPECT_TRUE(failsWith(
      validateLaunchConfig("k", Dim3(1), Dim3(32, 32, 2), 0, std::nullopt),
      "block (32,32,2) has 2048 threads; CUDA allows at most 1024 per block"));
}

TEST(LaunchConfigTest, KernelThreadLimit) {
  KernelLimits limits;
  limits.maxThreadsPerBlock = 384;
  EXPECT_TRUE(succeeds(
      validateLaunchConfig("k", Dim3(1), Dim3(384), 0, std::nullopt, limits)));
  EXPECT_TRUE(failsWith(
      validateLaunchConfig("k", Dim3(1), Dim3(512), 0, std::nullopt, limits),
      "has 512 threads but the kernel allows at most 384"));
}

TEST(LaunchConfigTest, DynamicSharedMemoryAboveTheKernelLimit) {
  // Default limit: 48 KiB until setMaxDynamicSharedMemory raises it.
  EXPECT_TRUE(succeeds(
      validateLaunchConfig("k", Dim3(1), Dim3(128), 49152, std::nullopt)));
  EXPECT_TRUE(failsWith(
      validateLaunchConfig("attn_fwd", Dim3(1), Dim3(128), 200000,
                           std::nullopt),
      "asks for 200000 bytes of dynamic shared memory but the kernel's limit "
      "is 49152; raise it first with "
      "Function::setMaxDynamicSharedMemory(200000)"));
  KernelLimits unlimited;
  unlimited.maxDynamicSharedBytes = SIZE_MAX;
  EXPECT_TRUE(failsWith(validateLaunchConfig("k", Dim3(1), Dim3(128),
                                             size_t(UINT_MAX) + 1, std::nullopt,
                                             unlimited),
                        "more than any launch can express"));
}

TEST(LaunchConfigTest, Clusters) {
  EXPECT_TRUE(
      failsWith(validateLaunchConfig("k", Dim3(4), Dim3(128), 0, Dim3(0)),
                "cluster (0,1,1) has a zero dimension"));
  EXPECT_TRUE(
      failsWith(validateLaunchConfig("k", Dim3(16), Dim3(128), 0, Dim3(16)),
                "cluster (16,1,1) has 16 blocks; the portable limit is 8"));
  EXPECT_TRUE(
      failsWith(validateLaunchConfig("k", Dim3(130), Dim3(128), 0, Dim3(4)),
                "grid (130,1,1) is not a multiple of cluster (4,1,1) in x"));
  EXPECT_TRUE(failsWith(
      validateLaunchConfig("k", Dim3(4, 3), Dim3(128), 0, Dim3(2, 2)), "in y"));
}

TEST(LaunchConfigTest, Dim3Helpers) {
  EXPECT_EQ(Dim3().str(), "(1,1,1)");
  EXPECT_EQ(Dim3(2, 3, 4).count(), 24u);
  EXPECT_EQ(Dim3(65535, 65535, 65535).count(), 281462092005375ull);
}

//===----------------------------------------------------------------------===//
// TMA descriptors
//===----------------------------------------------------------------------===//

/// A valid descriptor of a bf16 [batch=2, seq=4096, heads=8, headDim=128]
/// tensor read in 128x64 tiles; each test breaks one field.
struct TmaCase {
  const char *name = "Q";
  CUtensorMapDataType type = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  uint32_t rank = 4;
  uint64_t address = 0x7f0000000000;
  uint64_t dims[5] = {128, 8, 4096, 2, 1};
  uint64_t strides[4] = {256, 2048, 2048 * 4096, 0};
  uint32_t box[5] = {64, 1, 128, 1, 1};
  uint32_t elementStrides[5] = {1, 1, 1, 1, 1};
  CUtensorMapInterleave interleave = CU_TENSOR_MAP_INTERLEAVE_NONE;
  TmaSwizzle swizzle = TmaSwizzle::B128;
  CUtensorMapL2promotion l2 = CU_TENSOR_MAP_L2_PROMOTION_L2_256B;
  CUtensorMapFloatOOBfill oob = CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE;

  Status validate() const {
    return validateTensorMap(name, type, rank, address, dims, strides, box,
                             elementStrides, interleave, swizzle, l2, oob);
  }
};

TEST(TmaTest, ValidDescriptorsPass) {
  TmaCase c;
  EXPECT_TRUE(succeeds(c.validate()));
  c.rank = 1;
  EXPECT_TRUE(succeeds(c.validate()));
  TmaCase five;
  five.rank = 5;
  five.strides[3] = five.strides[2] * 2;
  EXPECT_TRUE(succeeds(five.validate()));
  TmaCase noSwizzle;
  noSwizzle.swizzle = TmaSwizzle::None;
  noSwizzle.box[0] = 256; // 512 bytes: fine without swizzle.
  EXPECT_TRUE(succeeds(noSwizzle.validate()));
}

TEST(TmaTest, Rank) {
  TmaCase c;
  c.rank = 0;
  EXPECT_TRUE(failsWith(c.validate(), "TMA descriptor for 'Q': rank 0 is out "
                                      "of range; TMA supports ranks 1 to 5"));
  c.rank = 6;
  EXPECT_TRUE(failsWith(c.validate(), "rank 6 is out of range"));
}

TEST(TmaTest, DataType) {
  TmaCase c;
  c.type = CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B;
  EXPECT_TRUE(failsWith(c.validate(), "data type 13 is not supported"));
  c.type = CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B;
  EXPECT_TRUE(failsWith(c.validate(), "data type 15 is not supported"));
  EXPECT_EQ(tensorMapElementSize(CU_TENSOR_MAP_DATA_TYPE_FLOAT16), 2u);
  EXPECT_EQ(tensorMapElementSize(CU_TENSOR_MAP_DATA_TYPE_FLOAT32), 4u);
  EXPECT_EQ(tensorMapElementSize(CU_TENSOR_MAP_DATA_TYPE_UINT8), 1u);
  EXPECT_EQ(tensorMapElementSize(CU_TENSOR_MAP_DATA_TYPE_FLOAT64), 8u);
}

TEST(TmaTest, GlobalAddress) {
  TmaCase c;
  c.address = 0;
  EXPECT_TRUE(failsWith(c.validate(),
                        "TMA descriptor for 'Q': the global address is null"));
  c.address = 0x7f0000000008;
  EXPECT_TRUE(failsWith(c.validate(), "TMA descriptor for 'Q': global address "
                                      "0x7f0000000008 is not 16-byte aligned"));
}

TEST(TmaTest, Dims) {
  TmaCase c;
  c.dims[2] = 0;
  EXPECT_TRUE(failsWith(c.validate(),
                        "dims[2] is 0; every dimension must be at least 1"));
  c.dims[2] = (uint64_t(1) << 32) + 1;
  EXPECT_TRUE(failsWith(c.validate(), "dims[2] = 4294967297 exceeds the TMA "
                                      "limit of 2^32 elements"));
  c.dims[2] = uint64_t(1) << 32;
  EXPECT_TRUE(succeeds(c.validate()));
}

TEST(TmaTest, Strides) {
  TmaCase c;
  c.strides[1] = 2056;
  EXPECT_TRUE(failsWith(c.validate(),
                        "TMA descriptor for 'Q': strides[1] (the byte stride "
                        "of dims[2]) = 2056 bytes is not a multiple of 16"));
  c.strides[1] = 0;
  EXPECT_TRUE(failsWith(c.validate(), "strides[1] (the byte stride of "
                                      "dims[2]) = 0 bytes must be positive"));
  c.strides[1] = uint64_t(1) << 40;
  EXPECT_TRUE(failsWith(c.validate(), "is not below the TMA limit of 2^40"));
  c.strides[1] = (uint64_t(1) << 40) - 16;
  EXPECT_TRUE(succeeds(c.validate()));
}

TEST(TmaTest, BoxDims) {
  TmaCase c;
  c.box[2] = 0;
  EXPECT_TRUE(failsWith(c.validate(), "boxDims[2] = 0 is outside 1..256"));
  c.box[2] = 257;
  EXPECT_TRUE(failsWith(c.validate(), "boxDims[2] = 257 is outside 1..256"));
  c.box[2] = 256;
  EXPECT_TRUE(succeeds(c.validate()));
}

TEST(TmaTest, InnerBoxMustBeWholeSixteenByteChunks) {
  TmaCase c;
  c.box[0] = 4; // 8 bytes of bf16.
  EXPECT_TRUE(failsWith(c.validate(),
                        "the inner box (boxDims[0] = 4 x 2-byte elements = 8 "
                        "bytes) is not a multiple of 16 bytes"));
}

TEST(TmaTest, InnerBoxMustFitTheSwizzleSpan) {
  TmaCase c;
  c.box[0] = 128; // 256 bytes.
  EXPECT_TRUE(failsWith(
      c.validate(),
      "TMA descriptor for 'Q': the inner box (boxDims[0] = 128 x 2-byte "
      "elements = 256 bytes) exceeds the 128-byte span of 128B swizzle; use "
      "boxDims[0] <= 64 or a wider swizzle"));
  c.box[0] = 64;
  c.swizzle = TmaSwizzle::B64;
  EXPECT_TRUE(failsWith(c.validate(), "exceeds the 64-byte span of 64B"));
  c.box[0] = 32;
  EXPECT_TRUE(succeeds(c.validate()));
  c.swizzle = TmaSwizzle::B32;
  EXPECT_TRUE(failsWith(c.validate(), "use boxDims[0] <= 16"));
  c.box[0] = 16;
  EXPECT_TRUE(succeeds(c.validate()));
}

TEST(TmaTest, ElementStrides) {
  TmaCase c;
  c.elementStrides[1] = 0;
  EXPECT_TRUE(failsWith(c.validate(), "elementStrides[1] = 0 is outside 1..8"));
  c.elementStrides[1] = 9;
  EXPECT_TRUE(failsWith(c.validate(), "elementStrides[1] = 9 is outside 1..8"));
  c.elementStrides[1] = 8;
  EXPECT_TRUE(succeeds(c.validate()));
  // nullptr means all ones.
  EXPECT_TRUE(succeeds(
      validateTensorMap(c.name, c.type, c.rank, c.address, c.dims, c.strides,
                        c.box, nullptr, c.interleave, c.swizzle, c.l2, c.oob)));
}

TEST(TmaTest, Interleave) {
  TmaCase c;
  c.interleave = CU_TENSOR_MAP_INTERLEAVE_16B;
  c.rank = 2;
  EXPECT_TRUE(failsWith(c.validate(), "rank 2 is too small for an "
                                      "interleaved layout"));
  c.rank = 4;
  EXPECT_TRUE(succeeds(c.validate()));
  c.interleave = CU_TENSOR_MAP_INTERLEAVE_32B;
  EXPECT_TRUE(
      failsWith(c.validate(), "32B interleave requires 32B swizzle, not 128B"));
  c.swizzle = TmaSwizzle::B32;
  EXPECT_TRUE(succeeds(c.validate()));
  c.address += 16;
  EXPECT_TRUE(failsWith(c.validate(), "is not 32-byte aligned (required with "
                                      "32B interleave)"));
  c.address -= 16;
  c.strides[0] = 272;
  EXPECT_TRUE(failsWith(c.validate(), "is not a multiple of 32 (required "
                                      "with 32B interleave)"));
}

TEST(TmaTest, NanFillNeedsAFloatType) {
  TmaCase c;
  c.oob = CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA;
  EXPECT_TRUE(succeeds(c.validate()));
  c.type = CU_TENSOR_MAP_DATA_TYPE_UINT16;
  EXPECT_TRUE(failsWith(c.validate(), "NaN out-of-bounds fill needs a "
                                      "floating-point data type"));
}

TEST(TmaTest, OutOfRangeEnumsAndNullArrays) {
  // Only values inside each enum's range are well-defined to form; 3 is
  // one for CUtensorMapInterleave (0..2 named, range 0..3).
  TmaCase c;
  c.interleave = static_cast<CUtensorMapInterleave>(3);
  EXPECT_TRUE(failsWith(c.validate(), "interleave 3 is not"));
  c = TmaCase();
  c.swizzle = static_cast<TmaSwizzle>(9);
  EXPECT_TRUE(failsWith(c.validate(), "swizzle 9 is not"));
  c = TmaCase();
  EXPECT_TRUE(failsWith(validateTensorMap("K", c.type, 2, c.address, nullptr,
                                          c.strides, c.box, nullptr,
                                          c.interleave, c.swizzle, c.l2, c.oob),
                        "TMA descriptor for 'K': the dims array is null"));
  EXPECT_TRUE(failsWith(validateTensorMap("K", c.type, 2, c.address, c.dims,
                                          nullptr, c.box, nullptr, c.interleave,
                                          c.swizzle, c.l2, c.oob),
                        "the strides array is null (a rank-2 tensor needs 1 "
                        "stride(s))"));
  EXPECT_TRUE(failsWith(validateTensorMap("K", c.type, 2, c.address, c.dims,
                                          c.strides, nullptr, nullptr,
                                          c.interleave, c.swizzle, c.l2, c.oob),
                        "the boxDims array is null"));
  // Rank 1 needs no strides.
  EXPECT_TRUE(succeeds(validateTensorMap("K", c.type, 1, c.address, c.dims,
                                         nullptr, c.box, nullptr, c.interleave,
                                         c.swizzle, c.l2, c.oob)));
  EXPECT_TRUE(failsWith(validateTensorMap(nullptr, c.type, 0, c.address, c.dims,
                                          c.strides, c.box, nullptr,
                                          c.interleave, c.swizzle, c.l2, c.oob),
                        "TMA descriptor for 'tensor'"));
}

TEST(TmaTest, SwizzleHelpers) {
  EXPECT_EQ(swizzleSpanBytes(TmaSwizzle::None), 0u);
  EXPECT_EQ(swizzleSpanBytes(TmaSwizzle::B32), 32u);
  EXPECT_EQ(swizzleSpanBytes(TmaSwizzle::B64), 64u);
  EXPECT_EQ(swizzleSpanBytes(TmaSwizzle::B128), 128u);
  EXPECT_EQ(toCU(TmaSwizzle::B128), CU_TENSOR_MAP_SWIZZLE_128B);
  EXPECT_EQ(toCU(TmaSwizzle::None), CU_TENSOR_MAP_SWIZZLE_NONE);
  EXPECT_STREQ(toString(TmaSwizzle::B64), "64B");
}

TEST(TmaTest, EncodeChecksTheOutputBeforeTheDriver) {
  alignas(64) unsigned char storage[sizeof(CUtensorMap) + 64];
  auto *misaligned = reinterpret_cast<CUtensorMap *>(storage + 8);
  EXPECT_TRUE(
      failsWith(encodeTiled2D(misaligned, "O", CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
                              0x10000, 64, 64, 128, 64, 64),
                "TMA descriptor for 'O': the output CUtensorMap is "
                "not 64-byte aligned"));
  EXPECT_TRUE(
      failsWith(encodeTiled2D(nullptr, "O", CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
                              0x10000, 64, 64, 128, 64, 64),
                "the output CUtensorMap pointer is null"));
}

TEST(TmaTest, HelpersValidateToo) {
  CUtensorMap map;
  // 2D: [rows=64, cols=64] f16 with a 100-byte row stride.
  EXPECT_TRUE(
      failsWith(encodeTiled2D(&map, "V", CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
                              0x10000, 64, 64, 100, 64, 64),
                "TMA descriptor for 'V': strides[0] (the byte stride "
                "of dims[1]) = 100 bytes is not a multiple of 16"));
  EXPECT_TRUE(
      failsWith(encodeTiled2D(&map, "V", CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
                              0x10000, 64, 128, 256, 64, 128),
                "exceeds the 128-byte span of 128B swizzle"));
  BSHDStrides strides = BSHDStrides::contiguous(1024, 8, 128);
  EXPECT_TRUE(
      failsWith(encodeTiledBSHD(&map, "K", CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
                                0x10000, -1, 1024, 8, 128, strides, 128, 64),
                "TMA descriptor for 'K': batch is -1; it must be at "
                "least 1"));
  BSHDStrides bad = strides;
  bad.seq = 1020; // 2040 bytes.
  EXPECT_TRUE(
      failsWith(encodeTiledBSHD(&map, "K", CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
                                0x10000, 2, 1024, 8, 128, bad, 128, 64),
                "strides[1] (the byte stride of dims[2]) = 2040 bytes "
                "is not a multiple of 16"));
  BSHDStrides huge = strides;
  huge.batch = INT64_MAX;
  EXPECT_TRUE(
      failsWith(encodeTiledBSHD(&map, "K", CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
                                0x10000, 2, 1024, 8, 128, huge, 128, 64),
                "is not below the TMA limit of 2^40 bytes"));
}

//===----------------------------------------------------------------------===//
// Attention arguments
//===----------------------------------------------------------------------===//

/// Llama-3-8B-like prefill arguments: bf16, 32 query heads, 8 KV heads.
AttentionArgs validArgs() {
  AttentionArgs a;
  a.q = 0x7f0000000000;
  a.k = 0x7f0010000000;
  a.v = 0x7f0020000000;
  a.o = 0x7f0030000000;
  a.batch = 2;
  a.seqQ = 1024;
  a.seqKV = 1024;
  a.numQHeads = 32;
  a.numKVHeads = 8;
  a.headDim = 128;
  a.elementBytes = 2;
  a.setContiguousStrides();
  return a;
}

TEST(AttentionArgsTest, ValidArgumentsPass) {
  AttentionArgs a = validArgs();
  EXPECT_TRUE(succeeds(validateAttentionArgs(a)));
  a.lse = 0x7f0040000000;
  a.stats = 0x7f0050000000;
  EXPECT_TRUE(succeeds(validateAttentionArgs(a)));
  EXPECT_EQ(a.kStrides.seq, 8 * 128);
  EXPECT_EQ(a.qStrides.batch, 1024 * 32 * 128);
}

TEST(AttentionArgsTest, NullPointersAreNamed) {
  const char *names[] = {"Q", "K", "V", "O"};
  uint64_t AttentionArgs::*fields[] = {&AttentionArgs::q, &AttentionArgs::k,
                                       &AttentionArgs::v, &AttentionArgs::o};
  for (int i = 0; i < 4; ++i) {
    AttentionArgs a = validArgs();
    a.*fields[i] = 0;
    Status status = validateAttentionArgs(a);
    ASSERT_FALSE(status.ok()) << names[i];
    EXPECT_EQ(status.message(), std::string(names[i]) + " is a null pointer");
  }
}

TEST(AttentionArgsTest, MisalignedPointersAreNamed) {
  AttentionArgs a = validArgs();
  a.k += 8;
  EXPECT_TRUE(failsWith(validateAttentionArgs(a),
                        "K (0x7f0010000008) is not 16-byte aligned"));
  a = validArgs();
  a.lse = 0x7f0040000004;
  EXPECT_TRUE(failsWith(validateAttentionArgs(a), "LSE (0x7f0040000004) is "
                                                  "not 16-byte aligned"));
  a = validArgs();
  a.stats = 0x7f0050000008;
  EXPECT_TRUE(failsWith(validateAttentionArgs(a), "stats (0x7f0050000008)"));
}

TEST(AttentionArgsTest, SizesMustBePositive) {
  struct Case {
    int64_t AttentionArgs::*field;
    const char *name;
  };
  for (Case c : {Case{&AttentionArgs::batch, "batch"},
                 Case{&AttentionArgs::seqQ, "seqQ"},
                 Case{&AttentionArgs::seqKV, "seqKV"},
                 Case{&AttentionArgs::numQHeads, "numQHeads"},
                 Case{&AttentionArgs::numKVHeads, "numKVHeads"},
                 Case{&AttentionArgs::headDim, "headDim"}}) {
    AttentionArgs a = validArgs();
    a.*c.field = 0;
    EXPECT_TRUE(
        failsWith(validateAttentionArgs(a),
                  std::string(c.name) + " is 0; it must be at least 1"));
    a.*c.field = -3;
    EXPECT_TRUE(
        failsWith(validateAttentionArgs(a), std::string(c.name) + " is -3"));
  }
  AttentionArgs a = validArgs();
  a.seqKV = int64_t(1) << 32;
  EXPECT_TRUE(failsWith(validateAttentionArgs(a),
                        "seqKV is 4294967296, more than the supported"));
}

TEST(AttentionArgsTest, HeadCountsMustDivide) {
  AttentionArgs a = validArgs();
  a.numKVHeads = 6;
  a.setContiguousStrides();
  EXPECT_TRUE(failsWith(validateAttentionArgs(a),
                        "numQHeads (32) is not a multiple of numKVHeads (6)"));
}

TEST(AttentionArgsTest, ElementBytes) {
  AttentionArgs a = validArgs();
  a.elementBytes = 3;
  EXPECT_TRUE(failsWith(validateAttentionArgs(a),
                        "elementBytes is 3; expected 1, 2 or 4"));
}

TEST(AttentionArgsTest, StridesMustSuitTma) {
  AttentionArgs a = validArgs();
  a.kStrides.seq = 100;
  EXPECT_TRUE(failsWith(validateAttentionArgs(a),
                        "K seq stride (100 elements = 200 bytes) is not a "
                        "multiple of 16 bytes, which TMA requires"));
  a = validArgs();
  a.vStrides.head = 0;
  EXPECT_TRUE(failsWith(validateAttentionArgs(a),
                        "V head stride (0 elements) must be positive"));
  a = validArgs();
  a.qStrides.batch = -8;
  EXPECT_TRUE(failsWith(validateAttentionArgs(a), "Q batch stride (-8 "
                                                  "elements) must be "
                                                  "positive"));
  a = validArgs();
  a.oStrides.batch = int64_t(1) << 39; // 2^40 bytes of bf16.
  EXPECT_TRUE(failsWith(validateAttentionArgs(a),
                        "O batch stride (549755813888 elements) is not below "
                        "2^40 bytes"));
  // With 4-byte elements, a stride must be a multiple of 4 elements.
  a = validArgs();
  a.elementBytes = 4;
  a.kStrides.seq = 1028; // 4112 bytes.
  EXPECT_TRUE(succeeds(validateAttentionArgs(a)));
  a.kStrides.seq = 1026; // 4104 bytes.
  EXPECT_TRUE(failsWith(validateAttentionArgs(a), "K seq stride (1026 "
                                                  "elements = 4104 bytes)"));
}

TEST(AttentionArgsTest, NonContiguousLayoutsPass) {
  // [B, H, S, D] in memory, described through BSHD strides.
  AttentionArgs a = validArgs();
  a.qStrides = {32 * 1024 * 128, 128, 1024 * 128};
  a.oStrides = a.qStrides;
  a.kStrides = {8 * 1024 * 128, 128, 1024 * 128};
  a.vStrides = a.kStrides;
  EXPECT_TRUE(succeeds(validateAttentionArgs(a)));
  // Padded rows.
  a = validArgs();
  a.oStrides.seq += 64;
  a.oStrides.batch = a.oStrides.seq * a.seqQ;
  EXPECT_TRUE(succeeds(validateAttentionArgs(a)));
}

TEST(AttentionArgsTest, OutputMustNotOverlapItself) {
  AttentionArgs a = validArgs();
  a.oStrides.head = 64; // Heads overlap halfway.
  EXPECT_TRUE(failsWith(validateAttentionArgs(a),
                        "O's layout overlaps itself: its head stride (64 "
                        "elements) is smaller than headDim extent x headDim "
                        "stride (128 x 1 elements)"));
  a = validArgs();
  a.oStrides.batch = a.oStrides.seq; // Batches alias sequence rows.
  EXPECT_TRUE(failsWith(validateAttentionArgs(a), "O's layout overlaps "
                                                  "itself"));
  // Inputs may overlap themselves (e.g. K rows sharing memory); only O is
  // checked.
  a = validArgs();
  a.kStrides.head = 64;
  EXPECT_TRUE(succeeds(validateAttentionArgs(a)));
  // With a single batch entry the batch stride does not matter.
  a = validArgs();
  a.batch = 1;
  a.oStrides.batch = 16;
  EXPECT_TRUE(succeeds(validateAttentionArgs(a)));
}

// O is written while CTAs still read Q, K and V: an O inside them would be
// a wrong result, not an error, so it is refused up front.
TEST(AttentionArgsTest, OutputMustNotOverlapInputs) {
  AttentionArgs a = validArgs();
  a.o = a.k + 4096; // inside K
  // (A workspace query's stand-in pointers pass validateAttentionArgs.)
  EXPECT_TRUE(succeeds(validateAttentionArgs(a)));
  EXPECT_TRUE(failsWith(checkOutputOverlap(a),
                        "O (0x7f0010001000) overlaps K (0x7f0010000000): the "
                        "kernel writes O while every CTA of a head still "
                        "reads K; give O memory of its own"));
  a = validArgs();
  a.o = a.v - 4096; // O's last rows run into V
  EXPECT_TRUE(failsWith(checkOutputOverlap(a), "overlaps V"));
  a = validArgs();
  a.o = a.q + 256; // Q shifted by one row
  EXPECT_TRUE(failsWith(checkOutputOverlap(a),
                        "overlaps Q (0x7f0000000000): the kernel writes O "
                        "while CTAs still read Q; give O memory of its own"));
  // In place too: no run has checked it.
  a.o = a.q;
  EXPECT_TRUE(failsWith(checkOutputOverlap(a), "overlaps Q"));
  // Right after K's last element is not inside it.
  a = validArgs();
  a.o = a.k + uint64_t(2 * 1024 * 8 * 128 * 2);
  a.v = a.o + 0x10000000;
  EXPECT_TRUE(succeeds(checkOutputOverlap(a)));
}

//===----------------------------------------------------------------------===//
// Files
//===----------------------------------------------------------------------===//

TEST(ModuleTest, MissingFileIsNamed) {
  Context context;
  Module module;
  EXPECT_TRUE(
      failsWith(Module::loadFile(context, "/nonexistent/attn.cubin", &module),
                "cannot open kernel file '/nonexistent/attn.cubin': "
                "No such file or directory"));
}

// Every file the runtime and the C API read goes through readWholeFile: a
// device or a pipe gets an error at the cap instead of the whole memory.
TEST(FilesTest, ReadsStopAtTheCap) {
  std::string data;
  int openErrno = -1;
  EXPECT_TRUE(failsWith(
      readWholeFile("/dev/zero", "kernel file", &data, &openErrno, 1 << 20),
      "cannot read kernel file '/dev/zero': larger than 1 MiB"));
  EXPECT_EQ(openErrno, 0);
  EXPECT_TRUE(data.empty());
  EXPECT_TRUE(failsWith(
      readWholeFile("/nonexistent/x.meta", "kernel metadata", &data,
                    &openErrno),
      "cannot open kernel metadata '/nonexistent/x.meta': No such file"));
  EXPECT_EQ(openErrno, ENOENT);
  // Exactly at the cap is fine.
  std::string path = ::testing::TempDir() + "/blasst-cap.bin";
  {
    FILE *f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::string bytes(1 << 20, 'x');
    std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
  }
  ASSERT_TRUE(readWholeFile(path, "kernel file", &data, nullptr, 1 << 20));
  EXPECT_EQ(data.size(), size_t(1) << 20);
  std::remove(path.c_str());
}

TEST(ModuleTest, NonCudaElfIsRejected) {
  // An x86-64 ELF header (e_machine 62).
  unsigned char elf[64] = {0x7f, 'E', 'L', 'F', 2, 1, 1};
  elf[18] = 62;
  Context context;
  Module module;
  EXPECT_TRUE(
      failsWith(Module::loadData(context, elf, sizeof(elf), "host.so", &module),
                "cannot load kernel 'host.so': the image is an ELF "
                "file for machine 62, not a CUDA cubin"));
  EXPECT_TRUE(failsWith(Module::loadData(context, nullptr, 0, "k", &module),
                        "the image is empty"));
}

//===----------------------------------------------------------------------===//
// On a GPU
//===----------------------------------------------------------------------===//

/// out[i] = base + i for i < n, one thread per element.
const char kIotaPtx[] = R"(
.version 8.0
.target sm_90
.address_size 64

.visible .entry blasst_test_iota(
    .param .u64 out,
    .param .u32 base,
    .param .u32 n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r1, [base];
  ld.param.u32 %r2, [n];
  mov.u32 %r3, %ctaid.x;
  mov.u32 %r4, %ntid.x;
  mov.u32 %r5, %tid.x;
  mad.lo.s32 %r6, %r3, %r4, %r5;
  setp.ge.u32 %p1, %r6, %r2;
  @%p1 bra DONE;
  cvta.to.global.u64 %rd2, %rd1;
  mul.wide.u32 %rd3, %r6, 4;
  add.s64 %rd4, %rd2, %rd3;
  add.s32 %r7, %r1, %r6;
  st.global.u32 [%rd4], %r7;
DONE:
  ret;
}
)";

class GpuTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string why;
    if (!deviceAvailable(&why))
      GTEST_SKIP() << "no usable GPU: " << why;
    ASSERT_TRUE(succeeds(Context::create(0, &context)));
  }

  /// Loads kIotaPtx (without its terminating NUL, to exercise the copy that
  /// adds one) and looks up its kernel.
  void loadIota(Module *module, Function *function) {
    ASSERT_TRUE(succeeds(Module::loadData(
        context, kIotaPtx, sizeof(kIotaPtx) - 1, "iota", module)));
    ASSERT_TRUE(succeeds(module->getFunction("blasst_test_iota", function)));
  }

  /// Runs iota over `n` elements with the given launch shape and checks the
  /// result.
  void runIota(const Function &function, unsigned n, Dim3 grid, Dim3 block,
               size_t dynamicShared, std::optional<Dim3> cluster) {
    DeviceBuffer out;
    ASSERT_TRUE(succeeds(DeviceBuffer::allocate(context, n * sizeof(uint32_t),
                                                "iota out", &out)));
    ASSERT_TRUE(succeeds(out.fill(0xff)));
    CUdeviceptr ptr = out.get();
    unsigned base = 1000;
    void *params[] = {&ptr, &base, &n};
    ASSERT_TRUE(succeeds(launch(function, grid, block, dynamicShared, nullptr,
                                params, cluster)));
    ASSERT_TRUE(succeeds(synchronize()));
    std::vector<uint32_t> host(n);
    ASSERT_TRUE(succeeds(out.download(host)));
    for (unsigned i = 0; i < n; ++i)
      ASSERT_EQ(host[i], base + i) << "at " << i;
  }

  Context context;
};

TEST_F(GpuTest, ContextDescribesTheDevice) {
  const DeviceInfo &info = context.info();
  EXPECT_EQ(info.ordinal, 0);
  EXPECT_FALSE(info.name.empty());
  EXPECT_GT(info.multiprocessorCount, 0);
  EXPECT_GE(info.computeCapabilityMajor, 5);
  EXPECT_GE(info.maxSharedMemoryPerBlockOptin, info.maxSharedMemoryPerBlock);
  EXPECT_EQ(info.maxThreadsPerBlock, 1024);
  EXPECT_GT(info.driverVersion, 12000);
  // The DRAM bandwidth the TMA decode entry is chosen by (H100 SXM 3.35
  // TB/s, H200 4.8).
  EXPECT_GT(info.dramBytesPerSecond(), 1e12);
  EXPECT_NE(info.describe().find(info.name), std::string::npos);
  std::printf("[          ] %s\n", info.describe().c_str());
  EXPECT_TRUE(succeeds(context.makeCurrent()));
  EXPECT_TRUE(succeeds(context.synchronize()));

  Context other;
  EXPECT_TRUE(failsWith(Context::create(1000, &other),
                        "GPU ordinal 1000 is out of range"));
  // Moving keeps one owner of the primary context reference.
  Context moved = std::move(context);
  EXPECT_TRUE(moved.valid());
  EXPECT_FALSE(context.valid());
  context = std::move(moved);
}

TEST_F(GpuTest, BuiltinErrorTextsMatchTheDriver) {
  const detail::DriverApi *api = detail::loadedDriverOrNull();
  ASSERT_NE(api, nullptr);
  for (int code = 0; code < 1000; ++code) {
    const char *ourName, *ourText;
    if (!detail::builtinErrorText(static_cast<CUresult>(code), &ourName,
                                  &ourText))
      continue;
    const char *name = nullptr, *text = nullptr;
    ASSERT_EQ(api->getErrorName(static_cast<CUresult>(code), &name),
              CUDA_SUCCESS);
    ASSERT_EQ(api->getErrorString(static_cast<CUresult>(code), &text),
              CUDA_SUCCESS);
    EXPECT_STREQ(ourName, name) << code;
    EXPECT_STREQ(ourText, text) << code;
  }
}

TEST_F(GpuTest, LoadsPtxLaunchesAndReadsBack) {
  Module module;
  Function function;
  loadIota(&module, &function);
  EXPECT_EQ(function.name(), "blasst_test_iota");
  EXPECT_EQ(function.moduleName(), "iota");
  runIota(function, 1000, Dim3(8), Dim3(128), 0, std::nullopt);

  EventTimer timer;
  ASSERT_TRUE(succeeds(EventTimer::create(context, &timer)));
  ASSERT_TRUE(succeeds(timer.start()));
  runIota(function, 4096, Dim3(32), Dim3(128), 0, std::nullopt);
  ASSERT_TRUE(succeeds(timer.stop()));
  float ms = -1;
  ASSERT_TRUE(succeeds(timer.elapsedMs(&ms)));
  EXPECT_GE(ms, 0.0f);
}

TEST_F(GpuTest, LaunchesWithClusters) {
  if (context.info().computeCapabilityMajor < 9)
    GTEST_SKIP() << "clusters need sm_90+";
  Module module;
  Function function;
  loadIota(&module, &function);
  runIota(function, 1024, Dim3(8), Dim3(128), 0, Dim3(2));
  runIota(function, 1024, Dim3(8), Dim3(128), 0, Dim3(8));
}

TEST_F(GpuTest, LaunchChecksUseTheKernelsRealLimits) {
  Module module;
  Function function;
  loadIota(&module, &function);
  EXPECT_TRUE(
      failsWith(launch(function, Dim3(1), Dim3(1025), 0, nullptr, nullptr),
                "launch of kernel 'blasst_test_iota'"));
  EXPECT_TRUE(failsWith(
      launch(function, Dim3(4), Dim3(128), 0, nullptr, nullptr, Dim3(3)),
      "is not a multiple of cluster (3,1,1)"));
}

TEST_F(GpuTest, RaisesTheDynamicSharedMemoryLimit) {
  Module module;
  Function function;
  loadIota(&module, &function);
  size_t optin = size_t(context.info().maxSharedMemoryPerBlockOptin);
  // Above 48 KiB needs the opt-in first; the runtime says so.
  EXPECT_TRUE(failsWith(
      launch(function, Dim3(8), Dim3(128), 64 * 1024, nullptr, nullptr),
      "Function::setMaxDynamicSharedMemory(65536)"));
  EXPECT_TRUE(failsWith(function.setMaxDynamicSharedMemory(optin + 1024),
                        "kernel 'blasst_test_iota' needs " +
                            std::to_string(optin + 1024) +
                            " bytes of shared memory, device allows at "
                            "most " +
                            std::to_string(optin)));
  ASSERT_TRUE(succeeds(function.setMaxDynamicSharedMemory(optin)));
  int limit = 0;
  ASSERT_TRUE(succeeds(function.getAttribute(
      CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, &limit)));
  EXPECT_EQ(size_t(limit), optin);
  runIota(function, 1000, Dim3(8), Dim3(128), optin, std::nullopt);
}

TEST_F(GpuTest, LoadErrorsNameTheKernelAndModule) {
  Module module;
  Function function;
  loadIota(&module, &function);
  EXPECT_TRUE(failsWith(module.getFunction("attn_fwd", &function),
                        "cuModuleGetFunction failed while looking up kernel "
                        "'attn_fwd' in module 'iota': CUDA_ERROR_NOT_FOUND"));
  std::vector<uint8_t> global;
  EXPECT_TRUE(failsWith(module.readGlobal("blasst_stamps", &global),
                        "cuModuleGetGlobal failed while looking up global "
                        "'blasst_stamps' in module 'iota': "
                        "CUDA_ERROR_NOT_FOUND"));

  // A CUDA ELF header followed by garbage.
  unsigned char bogus[64] = {0x7f, 'E', 'L', 'F', 2, 1, 1};
  bogus[18] = 190;
  Module broken;
  Status status =
      Module::loadData(context, bogus, sizeof(bogus), "attn_fwd", &broken);
  EXPECT_TRUE(failsWith(status, "cuModuleLoadData failed while loading kernel "
                                "'attn_fwd' from cubin (64 bytes)"));
  std::printf("[          ] %s\n", status.message().c_str());

  const char badPtx[] = ".version 8.0\n.target sm_90\nthis is not ptx\n";
  status = Module::loadData(context, badPtx, sizeof(badPtx), "bad", &broken);
  EXPECT_TRUE(failsWith(status, "from PTX"));
  EXPECT_FALSE(broken.valid());
}

TEST_F(GpuTest, LoadsACubinFile) {
  const char *path = std::getenv("BLASST_TEST_CUBIN");
  if (!path || !*path)
    GTEST_SKIP() << "set BLASST_TEST_CUBIN to a cubin of kIotaPtx";
  Module module;
  ASSERT_TRUE(succeeds(Module::loadFile(context, path, &module)));
  EXPECT_EQ(module.name(), path);
  Function function;
  ASSERT_TRUE(succeeds(module.getFunction("blasst_test_iota", &function)));
  runIota(function, 777, Dim3(7), Dim3(128), 0, std::nullopt);
}

TEST_F(GpuTest, LoadsAPtxFile) {
  char path[] = "/tmp/blasst-runtime-test-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, kIotaPtx, sizeof(kIotaPtx) - 1),
            ssize_t(sizeof(kIotaPtx) - 1));
  close(fd);
  Module module;
  Status status = Module::loadFile(context, path, &module);
  unlink(path);
  ASSERT_TRUE(succeeds(status));
  Function function;
  ASSERT_TRUE(succeeds(module.getFunction("blasst_test_iota", &function)));
  runIota(function, 100, Dim3(1), Dim3(128), 0, std::nullopt);
}

TEST_F(GpuTest, BufferCopiesAreBoundsChecked) {
  DeviceBuffer buffer;
  ASSERT_TRUE(succeeds(DeviceBuffer::allocate(context, 64, "Q", &buffer)));
  EXPECT_EQ(buffer.size(), 64u);
  EXPECT_EQ(buffer.label(), "Q");
  std::vector<uint8_t> data(64, 7), back(64, 0);
  EXPECT_TRUE(succeeds(buffer.copyFromHost(data.data(), 64)));
  EXPECT_TRUE(succeeds(buffer.copyToHost(back.data(), 64)));
  EXPECT_EQ(back, data);
  EXPECT_TRUE(succeeds(buffer.copyFromHost(data.data(), 16, 48)));
  EXPECT_TRUE(failsWith(buffer.copyFromHost(data.data(), 32, 48),
                        "cannot copy into buffer 'Q': 32 bytes at offset 48 "
                        "overrun its 64 bytes"));
  EXPECT_TRUE(failsWith(buffer.copyToHost(back.data(), 65),
                        "cannot copy from buffer 'Q'"));
  EXPECT_TRUE(failsWith(DeviceBuffer::allocate(context, 0, "empty", &buffer),
                        "cannot allocate 'empty': the size is 0 bytes"));
  // An impossible allocation is explained, not fatal.
  DeviceBuffer huge;
  EXPECT_TRUE(
      failsWith(DeviceBuffer::allocate(context, size_t(1) << 50, "huge", &huge),
                "cuMemAlloc failed while allocating 1125899906842624 "
                "bytes for 'huge'"));
  DeviceBuffer moved = std::move(buffer);
  EXPECT_TRUE(moved.valid());
  EXPECT_FALSE(buffer.valid());
}

// With the real driver: the runtime's calls give the calling thread its
// current context back (here: none), so a host application's own context
// choice survives them.
TEST_F(GpuTest, CallsRestoreTheCallersContext) {
  void *cuda = dlopen(kDefaultDriverLibrary, RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(cuda, nullptr);
  auto getCurrent = reinterpret_cast<CUresult (*)(CUcontext *)>(
      dlsym(cuda, "cuCtxGetCurrent"));
  auto setCurrent =
      reinterpret_cast<CUresult (*)(CUcontext)>(dlsym(cuda, "cuCtxSetCurrent"));
  ASSERT_TRUE(getCurrent && setCurrent);
  auto current = [&] {
    CUcontext c = reinterpret_cast<CUcontext>(1);
    EXPECT_EQ(getCurrent(&c), CUDA_SUCCESS);
    return c;
  };
  EXPECT_EQ(current(), context.get()) << "Context::create makes it current";
  ASSERT_EQ(setCurrent(nullptr), CUDA_SUCCESS);
  Module module;
  Function function;
  loadIota(&module, &function);
  EXPECT_EQ(current(), nullptr) << "after Module::loadData";
  DeviceBuffer out;
  ASSERT_TRUE(succeeds(DeviceBuffer::allocate(context, 256, "out", &out)));
  EXPECT_EQ(current(), nullptr) << "after DeviceBuffer::allocate";
  ASSERT_TRUE(succeeds(out.fill(0)));
  std::vector<uint8_t> host(256);
  ASSERT_TRUE(succeeds(out.copyFromHost(host.data(), host.size())));
  ASSERT_TRUE(succeeds(out.copyToHost(host.data(), host.size())));
  EXPECT_EQ(current(), nullptr) << "after copies";
  ASSERT_TRUE(succeeds(context.synchronize()));
  EXPECT_EQ(current(), nullptr) << "after Context::synchronize";
  out = DeviceBuffer();
  module = Module();
  EXPECT_EQ(current(), nullptr) << "after freeing and unloading";
  ASSERT_TRUE(succeeds(context.makeCurrent()));
  EXPECT_EQ(current(), context.get());
  dlclose(cuda);
}

TEST_F(GpuTest, EncodesTensorMaps) {
  if (context.info().computeCapabilityMajor < 9)
    GTEST_SKIP() << "TMA needs sm_90+";
  DeviceBuffer q;
  const int64_t batch = 2, seq = 256, heads = 4, headDim = 128;
  ASSERT_TRUE(succeeds(DeviceBuffer::allocate(
      context, size_t(batch * seq * heads * headDim * 2), "Q", &q)));
  CUtensorMap map;
  EXPECT_TRUE(succeeds(encodeTiledBSHD(
      &map, "Q", CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, q.address(), batch, seq,
      heads, headDim, BSHDStrides::contiguous(seq, heads, headDim), 128, 64)));
  EXPECT_TRUE(succeeds(
      encodeTiled2D(&map, "Q2D", CU_TENSOR_MAP_DATA_TYPE_FLOAT16, q.address(),
                    batch * seq * heads, headDim, headDim * 2, 64, 64)));
  EXPECT_TRUE(succeeds(
      encodeTiled2D(&map, "Q2D-none", CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
                    q.address(), 64, 256, 512, 64, 256, TmaSwizzle::None)));
}

} // namespace
