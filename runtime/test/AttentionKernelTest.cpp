//===- AttentionKernelTest.cpp - Tests of the attention kernel launcher ---===//
//
// The metadata format and the argument checks are pure and run anywhere.
// The launch tests need a GPU of compute capability 9.0 (the kernels are
// sm_90a) and skip otherwise; they JIT a PTX "ABI probe" kernel with the
// exact parameter list of KernelABI.h that writes back what it received, so
// the packing of all 14 parameters, the grid and the block are checked
// without a compiled attention kernel.
//
//===----------------------------------------------------------------------===//

#include "blasst/Runtime/AttentionKernel.h"
#include "TestStatus.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fstream>
#include <unistd.h>
#include <vector>

using namespace blasst;
using namespace blasst::rt;

namespace {

using blasst::rt::testing::failsWith;
using blasst::rt::testing::succeeds;

KernelInfo sampleInfo() {
  KernelInfo info;
  info.kernelName = "attn_fwd_bf16_d128";
  info.target = "sm_90a";
  info.blockM = 128;
  info.blockN = 128;
  info.threads = 384;
  info.smemBytes = 196608;
  info.compilerVersion = "blasst 0.1.0 (abc123)";
  return info;
}

bool sameInfo(const KernelInfo &a, const KernelInfo &b) {
  return a.abiVersion == b.abiVersion && a.kernelName == b.kernelName &&
         a.target == b.target && a.blockM == b.blockM && a.blockN == b.blockN &&
         a.threads == b.threads && a.smemBytes == b.smemBytes &&
         a.persistent == b.persistent && a.clusterM == b.clusterM &&
         a.qTiles == b.qTiles && a.oTensorMap == b.oTensorMap &&
         a.compilerVersion == b.compilerVersion;
}

/// A fresh directory under $TMPDIR (or /tmp), removed by the destructor.
struct TempDir {
  std::string path;
  TempDir() {
    const char *base = std::getenv("TMPDIR");
    std::string pattern =
        std::string(base && *base ? base : "/tmp") + "/blasst-attn-XXXXXX";
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    if (::mkdtemp(buf.data()))
      path = buf.data();
  }
  ~TempDir() {
    if (!path.empty())
      std::system(("rm -rf '" + path + "'").c_str());
  }
  std::string file(const std::string &name) const { return path + "/" + name; }
};

void writeFile(const std::string &path, const std::string &text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

//===----------------------------------------------------------------------===//
// Metadata
//===----------------------------------------------------------------------===//

// A minimal 64-bit CUDA ELF: the header, one section header, the section's
// bytes (the kernel's name), laid out as a real cubin is.
static std::string tinyCubin(const std::string &name) {
  std::string elf(64, '\0');
  auto put = [&](std::string &b, size_t at, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i)
      b[at + i] = char((v >> (8 * i)) & 0xff);
  };
  elf[0] = 0x7f, elf[1] = 'E', elf[2] = 'L', elf[3] = 'F';
  elf[4] = 2, elf[5] = 1;            // 64-bit, little-endian
  put(elf, 18, 190, 2);              // e_machine = EM_CUDA
  put(elf, 40, 64 + name.size(), 8); // e_shoff: after the name
  put(elf, 58, 64, 2);               // e_shentsize
  put(elf, 60, 1, 2);                // e_shnum
  elf += name;
  std::string sh(64, '\0');
  put(sh, 4, 1, 4);            // SHT_PROGBITS
  put(sh, 24, 64, 8);          // sh_offset: the name
  put(sh, 32, name.size(), 8); // sh_size
  return elf + sh;
}

// Corrupt, empty and foreign cubins are caught without a driver.
TEST(CubinImageTest, ChecksTheELFWithoutADriver) {
  std::string good = tinyCubin("my_kernel");
  EXPECT_EQ(rt::checkCubinImage(good.data(), good.size(), "my_kernel"), "");
  EXPECT_NE(rt::checkCubinImage(good.data(), good.size(), "other")
                .find("does not contain the kernel 'other'"),
            std::string::npos);
  EXPECT_NE(rt::checkCubinImage(good.data(), good.size() - 10, "my_kernel")
                .find("truncated?"),
            std::string::npos);
  EXPECT_NE(rt::checkCubinImage(good.data(), 0, "my_kernel")
                .find("not an ELF file (0 bytes)"),
            std::string::npos);
  std::string random(4096, '\x5a');
  EXPECT_NE(rt::checkCubinImage(random.data(), random.size(), "my_kernel")
                .find("not an ELF file"),
            std::string::npos);
  std::string x86 = good;
  x86[18] = 62, x86[19] = 0; // EM_X86_64
  EXPECT_NE(rt::checkCubinImage(x86.data(), x86.size(), "my_kernel")
                .find("not a CUDA ELF (e_machine 62)"),
            std::string::npos);
  // A section that runs past the end (its size overwritten).
  std::string longSection = good;
  longSection[good.size() - 64 + 32] = char(0xff);
  longSection[good.size() - 64 + 33] = char(0xff);
  EXPECT_NE(
      rt::checkCubinImage(longSection.data(), longSection.size(), "my_kernel")
          .find("a section extends past the end"),
      std::string::npos);
}

TEST(KernelInfoTest, FormatParseRoundTrip) {
  KernelInfo info = sampleInfo();
  std::string text = formatKernelInfo(info);
  EXPECT_NE(text.find("abi_version = 7\n"), std::string::npos) << text;
  EXPECT_NE(text.find("kernel = attn_fwd_bf16_d128\n"), std::string::npos);
  EXPECT_NE(text.find("smem_bytes = 196608\n"), std::string::npos);
  KernelInfo parsed;
  ASSERT_TRUE(succeeds(parseKernelInfo(text, "x.meta", &parsed)));
  EXPECT_TRUE(sameInfo(info, parsed)) << formatKernelInfo(parsed);

  // compiler_version is optional and omitted when empty.
  info.compilerVersion.clear();
  text = formatKernelInfo(info);
  EXPECT_EQ(text.find("compiler_version"), std::string::npos);
  ASSERT_TRUE(succeeds(parseKernelInfo(text, "x.meta", &parsed)));
  EXPECT_TRUE(sameInfo(info, parsed));

  // persistent is optional: written only when set, read back, 0..1.
  EXPECT_EQ(text.find("persistent"), std::string::npos);
  info.persistent = 1;
  text = formatKernelInfo(info);
  EXPECT_NE(text.find("persistent = 1\n"), std::string::npos) << text;
  ASSERT_TRUE(succeeds(parseKernelInfo(text, "x.meta", &parsed)));
  EXPECT_TRUE(sameInfo(info, parsed));
  std::string bad = formatKernelInfo(sampleInfo()) + "persistent = 2\n";
  EXPECT_FALSE(succeeds(parseKernelInfo(bad, "x.meta", &parsed)));

  // kv_cp_async: written only when set, read back (load refuses it outside
  // decode: CpAsyncDecodeTakesKVPointersAndStrides).
  KernelInfo cpa = sampleInfo();
  EXPECT_EQ(formatKernelInfo(cpa).find("kv_cp_async"), std::string::npos);
  cpa.kvCpAsync = 1;
  text = formatKernelInfo(cpa);
  EXPECT_NE(text.find("kv_cp_async = 1\n"), std::string::npos) << text;
  ASSERT_TRUE(succeeds(parseKernelInfo(text, "x.meta", &parsed)));
  EXPECT_EQ(parsed.kvCpAsync, 1);

  // cluster_m likewise: written only when not 1, 1..2, not with persistent,
  // dividing block_n.
  KernelInfo pair = sampleInfo();
  EXPECT_EQ(formatKernelInfo(pair).find("cluster_m"), std::string::npos);
  pair.clusterM = 2;
  text = formatKernelInfo(pair);
  EXPECT_NE(text.find("cluster_m = 2\n"), std::string::npos) << text;
  ASSERT_TRUE(succeeds(parseKernelInfo(text, "x.meta", &parsed)));
  EXPECT_EQ(parsed.clusterM, 2);
  EXPECT_FALSE(succeeds(parseKernelInfo(
      formatKernelInfo(sampleInfo()) + "cluster_m = 3\n", "x.meta", &parsed)));
  pair.persistent = 1;
  EXPECT_FALSE(succeeds(validateKernelInfo(pair)));
  pair.persistent = 0;
  pair.blockN = 65;
  EXPECT_FALSE(succeeds(validateKernelInfo(pair)));

  // sink_seed (BLASST decode): written only when set, read back, needs
  // split_kv.
  KernelInfo seeded = sampleInfo();
  EXPECT_EQ(formatKernelInfo(seeded).find("sink_seed"), std::string::npos);
  seeded.blockM = 64;
  seeded.qGroup = 4;
  seeded.splitKV = 1;
  seeded.sinkSeed = 1;
  text = formatKernelInfo(seeded);
  EXPECT_NE(text.find("sink_seed = 1\n"), std::string::npos) << text;
  ASSERT_TRUE(succeeds(parseKernelInfo(text, "x.meta", &parsed)));
  EXPECT_EQ(parsed.sinkSeed, 1);
  // vote_first_block: likewise, and needs sink_seed.
  EXPECT_EQ(text.find("vote_first_block"), std::string::npos) << text;
  seeded.voteFirstBlock = 1;
  text = formatKernelInfo(seeded);
  EXPECT_NE(text.find("vote_first_block = 1\n"), std::string::npos) << text;
  ASSERT_TRUE(succeeds(parseKernelInfo(text, "x.meta", &parsed)));
  EXPECT_EQ(parsed.voteFirstBlock, 1);
  seeded.sinkSeed = 0;
  EXPECT_TRUE(failsWith(validateKernelInfo(seeded),
                        "vote_first_block needs sink_seed = 1"));
  // split_chunk: written only when set, read back; needs split_kv.
  EXPECT_EQ(text.find("split_chunk"), std::string::npos) << text;
  seeded.splitChunk = 2;
  text = formatKernelInfo(seeded);
  EXPECT_NE(text.find("split_chunk = 2\n"), std::string::npos) << text;
  ASSERT_TRUE(succeeds(parseKernelInfo(text, "x.meta", &parsed)));
  EXPECT_EQ(parsed.splitChunk, 2);
  seeded.splitKV = 0;
  EXPECT_TRUE(failsWith(validateKernelInfo(seeded),
                        "split_chunk needs split_kv = 1 (a decode kernel)"));
  seeded.splitKV = 1;
  seeded.splitChunk = 0;
  seeded.sinkSeed = 1;
  seeded.voteFirstBlock = 0;
  seeded.splitKV = 0;
  EXPECT_TRUE(failsWith(validateKernelInfo(seeded),
                        "sink_seed needs split_kv = 1 (a decode kernel)"));

  // q_tiles and o_tensor_map (ABI 4, sm_100a): written only when not the
  // default, read back; q_tiles divides block_m.
  KernelInfo b200 = sampleInfo();
  text = formatKernelInfo(b200);
  EXPECT_EQ(text.find("q_tiles"), std::string::npos) << text;
  EXPECT_EQ(text.find("o_tensor_map"), std::string::npos) << text;
  b200.target = "sm_100a";
  b200.blockM = 256;
  b200.qTiles = 2;
  b200.oTensorMap = 1;
  text = formatKernelInfo(b200);
  EXPECT_NE(text.find("q_tiles = 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("o_tensor_map = 1\n"), std::string::npos) << text;
  ASSERT_TRUE(succeeds(parseKernelInfo(text, "x.meta", &parsed)));
  EXPECT_TRUE(sameInfo(b200, parsed)) << formatKernelInfo(parsed);
  EXPECT_TRUE(failsWith(parseKernelInfo(formatKernelInfo(sampleInfo()) +
                                            "o_tensor_map = 2\n",
                                        "x.meta", &parsed),
                        "o_tensor_map = 2 is outside 0..1"));
  b200.blockM = 255;
  EXPECT_TRUE(failsWith(validateKernelInfo(b200),
                        "q_tiles = 2 does not divide block_m = 255"));
}

TEST(KernelInfoTest, WriteAndReadFile) {
  TempDir dir;
  ASSERT_FALSE(dir.path.empty());
  KernelInfo info = sampleInfo();
  ASSERT_TRUE(succeeds(writeKernelInfo(dir.file("k.meta"), info)));
  KernelInfo read;
  ASSERT_TRUE(succeeds(readKernelInfo(dir.file("k.meta"), &read)));
  EXPECT_TRUE(sameInfo(info, read));
}

TEST(KernelInfoTest, ToleratesCommentsBlanksAndCRLF) {
  std::string text = "# produced by blasst-compile\r\n"
                     "\r\n"
                     "  abi_version=7\r\n"
                     "kernel   =   k0\r\n"
                     "target = sm_100a\r\n"
                     "block_m = 64\n"
                     "block_n = 176\n"
                     "threads = 256\n"
                     "smem_bytes = 0\n"
                     "compiler_version = blasst 0.1.0 = dev\n";
  KernelInfo info;
  ASSERT_TRUE(succeeds(parseKernelInfo(text, "k.meta", &info)));
  EXPECT_EQ(info.kernelName, "k0");
  EXPECT_EQ(info.target, "sm_100a");
  EXPECT_EQ(info.blockM, 64);
  EXPECT_EQ(info.blockN, 176);
  EXPECT_EQ(info.threads, 256);
  EXPECT_EQ(info.smemBytes, 0);
  EXPECT_EQ(info.compilerVersion, "blasst 0.1.0 = dev");
}

TEST(KernelInfoTest, UnknownKeyNamesFileAndLine) {
  std::string text = formatKernelInfo(sampleInfo()) + "blockm = 64\n";
  KernelInfo info;
  Status s = parseKernelInfo(text, "dir/attn.meta", &info);
  EXPECT_TRUE(failsWith(s, "dir/attn.meta:10: unknown key 'blockm'"));
  EXPECT_TRUE(failsWith(s, "known keys: abi_version"));
}

TEST(KernelInfoTest, MissingRequiredKey) {
  KernelInfo info;
  Status s = parseKernelInfo("abi_version = 7\nkernel = k\ntarget = sm_90a\n"
                             "block_m = 128\nthreads = 384\nsmem_bytes = 1\n",
                             "a.meta", &info);
  EXPECT_TRUE(failsWith(s, "a.meta:6: missing required key 'block_n'"));
  s = parseKernelInfo("", "empty.meta", &info);
  EXPECT_TRUE(failsWith(s, "missing required key 'abi_version'"));
}

TEST(KernelInfoTest, AbiVersionMismatchIsReportedFirst) {
  // Another ABI may have other keys; the version is what matters.
  std::string text = "kernel = k\nnew_key = 3\nabi_version = 1\n";
  KernelInfo info;
  Status s = parseKernelInfo(text, "v1.meta", &info);
  EXPECT_TRUE(failsWith(s, "v1.meta:3: the kernel was built for kernel ABI "
                           "version 1, but this runtime implements version 7"));
  EXPECT_TRUE(failsWith(parseKernelInfo("abi_version = one\n", "m", &info),
                        "m:1: abi_version 'one' is not an integer"));
}

TEST(KernelInfoTest, BadValuesNameTheLine) {
  KernelInfo info;
  std::string base = "abi_version = 7\nkernel = k\n";
  EXPECT_TRUE(failsWith(parseKernelInfo(base + "target = sm_80\n", "m", &info),
                        "m:3: unknown target 'sm_80'"));
  // Bytes of a binary file reach the message escaped.
  EXPECT_TRUE(failsWith(
      parseKernelInfo(base + "target = sm\x1b[2J\x01\n", "m", &info),
      "m:3: unknown target 'sm\\x1b[2J\\x01'"));
  EXPECT_TRUE(failsWith(parseKernelInfo(base + "block_m = 12x\n", "m", &info),
                        "m:3: block_m '12x' is not an integer"));
  EXPECT_TRUE(failsWith(parseKernelInfo(base + "block_n = 512\n", "m", &info),
                        "m:3: block_n = 512 is outside 1..256"));
  EXPECT_TRUE(failsWith(parseKernelInfo(base + "threads = 0\n", "m", &info),
                        "m:3: threads = 0 is outside 1..1024"));
  EXPECT_TRUE(failsWith(
      parseKernelInfo(base + "smem_bytes = 99999999999\n", "m", &info),
      "m:3: smem_bytes '99999999999' is not an integer"));
  EXPECT_TRUE(failsWith(parseKernelInfo(base + "kernel = x\n", "m", &info),
                        "m:3: duplicate key 'kernel' (first given on line 2)"));
  EXPECT_TRUE(failsWith(parseKernelInfo(base + "threads\n", "m", &info),
                        "m:3: expected 'key = value', got 'threads'"));
  EXPECT_TRUE(failsWith(parseKernelInfo(base + "threads =\n", "m", &info),
                        "m:3: empty value for key 'threads'"));
  EXPECT_TRUE(failsWith(parseKernelInfo("kernel = a b\n", "m", &info),
                        "m:1: kernel name 'a b' contains blanks"));
}

TEST(KernelInfoTest, ReadMissingFileNamesIt) {
  KernelInfo info;
  EXPECT_TRUE(failsWith(readKernelInfo("/nonexistent/k.meta", &info),
                        "cannot open kernel metadata file "
                        "'/nonexistent/k.meta'"));
}

TEST(KernelInfoTest, WriteRejectsInvalidInfo) {
  TempDir dir;
  KernelInfo info = sampleInfo();
  info.blockM = 0;
  EXPECT_TRUE(failsWith(writeKernelInfo(dir.file("k.meta"), info),
                        "block_m = 0 is outside 1..256"));
  info = sampleInfo();
  info.abiVersion = kKernelABIVersion + 1;
  EXPECT_TRUE(
      failsWith(writeKernelInfo(dir.file("k.meta"), info),
                "kernel ABI version " + std::to_string(kKernelABIVersion + 1)));
  EXPECT_TRUE(
      failsWith(writeKernelInfo("/nonexistent/dir/k.meta", sampleInfo()),
                "cannot write kernel metadata "
                "'/nonexistent/dir/k.meta'"));
}

//===----------------------------------------------------------------------===//
// Argument checks
//===----------------------------------------------------------------------===//

AttentionSpec sampleSpec() {
  AttentionSpec spec;
  spec.dtype = DType::BF16;
  spec.headDim = spec.headDimV = 128;
  spec.numQHeads = 32;
  spec.numKVHeads = 8;
  spec.causal = true;
  return spec;
}

// A decode kernel with per-sequence lengths and 16-token pages (GQA 32/8,
// hd 128, 64-row tiles of 4 q heads): its .meta and its spec.
KernelInfo pagedDecodeInfo() {
  KernelInfo info = sampleInfo();
  info.blockM = 64;
  info.blockN = 64;
  info.threads = 256;
  info.qGroup = 4;
  info.splitKV = 1;
  info.perSeqKV = 1;
  info.pageSize = 16;
  return info;
}

AttentionSpec pagedDecodeSpec() {
  AttentionSpec spec = sampleSpec();
  spec.phase = Phase::Decode;
  spec.kvPerSequence = true;
  spec.kvPageSize = 16;
  return spec;
}

AttentionArgs sampleArgs() {
  AttentionArgs a;
  // 1 TiB apart: no shape of these tests makes them overlap.
  a.q = 0x10000000000;
  a.k = 0x20000000000;
  a.v = 0x30000000000;
  a.o = 0x40000000000;
  a.batch = 2;
  a.seqQ = 1000;
  a.seqKV = 1000;
  a.numQHeads = 32;
  a.numKVHeads = 8;
  a.headDim = 128;
  a.elementBytes = 2;
  a.setContiguousStrides();
  return a;
}

// sampleArgs over a paged pool for pagedDecodeInfo (one new token, up to
// 1000 keys per sequence, one split): [200 pages, 16 tokens, 8 heads, 128],
// a 63-column table.
AttentionArgs pagedDecodeArgs() {
  AttentionArgs a = sampleArgs(); // batch 2, 32 q / 8 kv heads, hd 128
  a.seqQ = 1;
  a.seqKV = 1000;
  a.kvSplits = 1;
  a.seqLensKV = 0x60000000;
  a.blockTable = 0x70000000;
  a.maxPages = 63;
  a.numPages = 200;
  int64_t row = 8 * 128;
  a.kStrides = a.vStrides = {16 * row, row, 128};
  return a;
}

Status check(const AttentionArgs &a, const AttentionSpec &s) {
  return validateArgsForKernel(a, sampleInfo(), s, "attn");
}

TEST(ArgsForKernelTest, ValidArgsPass) {
  EXPECT_TRUE(succeeds(check(sampleArgs(), sampleSpec())));
  AttentionSpec spec = sampleSpec();
  spec.lse = true;
  AttentionArgs args = sampleArgs();
  args.lse = 0x50000000;
  EXPECT_TRUE(succeeds(check(args, spec)));
  // A padded O row stride that is a multiple of 8 elements is fine.
  args.oStrides.seq += 8;
  args.oStrides.batch = args.oStrides.seq * args.seqQ;
  EXPECT_TRUE(succeeds(check(args, spec)));
}

TEST(ArgsForKernelTest, ShapesMustMatchTheSpec) {
  AttentionArgs a = sampleArgs();
  a.numQHeads = 16;
  a.setContiguousStrides();
  EXPECT_TRUE(failsWith(check(a, sampleSpec()),
                        "arguments for kernel 'attn': numQHeads is 16 but "
                        "the kernel was compiled for q_heads = 32"));
  a = sampleArgs();
  a.numKVHeads = 4;
  a.setContiguousStrides();
  EXPECT_TRUE(failsWith(check(a, sampleSpec()),
                        "numKVHeads is 4 but the kernel was compiled for "
                        "kv_heads = 8"));
  a = sampleArgs();
  a.headDim = 64;
  a.setContiguousStrides();
  EXPECT_TRUE(failsWith(check(a, sampleSpec()),
                        "headDim is 64 but the kernel was compiled for "
                        "head_dim = 128"));
  a = sampleArgs();
  a.elementBytes = 4;
  EXPECT_TRUE(failsWith(check(a, sampleSpec()),
                        "elementBytes is 4 but the kernel's dtype bf16 has "
                        "2-byte elements"));
  AttentionSpec spec = sampleSpec();
  spec.headDimV = 64;
  EXPECT_TRUE(failsWith(check(sampleArgs(), spec), "head_dim_v 64"));
}

TEST(ArgsForKernelTest, LseAndStatsPresentIffTheSpecAsks) {
  AttentionSpec spec = sampleSpec();
  AttentionArgs a = sampleArgs();
  spec.lse = true;
  EXPECT_TRUE(failsWith(check(a, spec), "compiled with lse = true but no LSE "
                                        "pointer was given"));
  spec.lse = false;
  a.lse = 0x50000000;
  EXPECT_TRUE(failsWith(check(a, spec),
                        "an LSE pointer was given but the "
                        "kernel was compiled with lse = false"));
  a.lse = 0;
  spec.sparsity = {SparsityKind::ScaleFactor, 4.0};
  spec.stats = true;
  EXPECT_TRUE(failsWith(check(a, spec), "compiled with stats = true but no "
                                        "stats pointer"));
  spec.stats = false;
  a.stats = 0x60000000;
  EXPECT_TRUE(failsWith(check(a, spec), "a stats pointer was given"));
  spec.stats = true;
  EXPECT_TRUE(succeeds(check(a, spec)));
}

TEST(ArgsForKernelTest, ThresholdPointerOnlyForBlasstKernels) {
  AttentionSpec spec = sampleSpec();
  AttentionArgs a = sampleArgs();
  a.log2ThresholdPtr = 0x70000000;
  EXPECT_TRUE(failsWith(check(a, spec), "a threshold pointer was given but "
                                        "the kernel is dense"));
  spec.sparsity = {SparsityKind::LnLambda, -5.0};
  EXPECT_TRUE(succeeds(check(a, spec)));
  a.log2ThresholdPtr = 0x70000002;
  EXPECT_TRUE(failsWith(check(a, spec), "not 4-byte aligned"));
}

TEST(ArgsForKernelTest, TmaAlignment) {
  AttentionArgs a = sampleArgs();
  a.k += 8;
  EXPECT_TRUE(failsWith(check(a, sampleSpec()), "K (0x20000000008) is not "
                                                "16-byte aligned"));
  a = sampleArgs();
  a.oStrides.seq += 4; // 4 elements = 8 bytes of padding: not a multiple of 8
  a.oStrides.batch = a.oStrides.seq * a.seqQ;
  EXPECT_TRUE(failsWith(check(a, sampleSpec()),
                        "O seq stride (4100 elements = 8200 bytes) is not a "
                        "multiple of 16 bytes"));
  a = sampleArgs();
  a.vStrides.head = 100;
  EXPECT_TRUE(failsWith(check(a, sampleSpec()), "V head stride"));
  a = sampleArgs();
  a.o = 0;
  EXPECT_TRUE(failsWith(check(a, sampleSpec()), "O is a null pointer"));
  AttentionSpec spec = sampleSpec();
  spec.lse = true;
  a = sampleArgs();
  a.lse = 0x50000004;
  EXPECT_TRUE(failsWith(check(a, spec), "LSE (0x50000004) is not 16-byte "
                                        "aligned"));
}

TEST(ArgsForKernelTest, GridLimits) {
  AttentionArgs a = sampleArgs();
  a.batch = 70000;
  EXPECT_TRUE(failsWith(check(a, sampleSpec()),
                        "batch (70000) exceeds 65535, the grid's z limit"));
}

TEST(ArgsForKernelTest, Log2Threshold) {
  AttentionSpec spec = sampleSpec();
  EXPECT_EQ(log2ThresholdForSpec(spec), 0.0f);
  spec.sparsity = {SparsityKind::LnLambda, -2.0};
  EXPECT_FLOAT_EQ(log2ThresholdForSpec(spec), float(-2.0 / std::log(2.0)));
  spec.sparsity = {SparsityKind::ScaleFactor, 8.0};
  EXPECT_FLOAT_EQ(log2ThresholdForSpec(spec), 3.0f);
}

TEST(AttentionLaunchTest, ParamsAreInAbiOrder) {
  AttentionLaunch l;
  void *p[AttentionLaunch::kNumParams];
  l.fillParams(p);
  void *expected[] = {&l.tmQ,           &l.tmK,
                      &l.tmV,           &l.o,
                      &l.lse,           &l.stats,
                      &l.seqQ,          &l.seqKV,
                      &l.oStrideB,      &l.oStrideS,
                      &l.oStrideH,      &l.scaleLog2,
                      &l.log2Threshold, &l.log2ThresholdPtr,
                      &l.workspace,     &l.seqLensKV,
                      &l.blockTable,    &l.maxPages,
                      &l.tmO,           &l.decodeSplits,
                      &l.decodeBatch,   &l.mergeLaunch,
                      &l.kPtr,          &l.vPtr,
                      &l.kStrideB,      &l.kStrideS,
                      &l.kStrideH,      &l.vStrideB,
                      &l.vStrideS,      &l.vStrideH,
                      &l.numPages};
  static_assert(AttentionLaunch::kNumParams == 31,
                "ABI 7: 19 parameters, 21 for persistent decode, 22 for "
                "merge_kernel decode, 30 for kv_cp_async decode, 31 for "
                "paged kv_cp_async decode");
  for (int i = 0; i < AttentionLaunch::kNumParams; ++i)
    EXPECT_EQ(p[i], expected[i]) << "parameter " << i;
  EXPECT_EQ(reinterpret_cast<uintptr_t>(&l.tmQ) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(&l.tmK) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(&l.tmV) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(&l.tmO) % 64, 0u);
  auto *heap = new AttentionLaunch;
  EXPECT_EQ(reinterpret_cast<uintptr_t>(&heap->tmV) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(&heap->tmO) % 64, 0u);
  delete heap;
}

// The decode split count when nobody chose one (chooseDecodeSplits): the
// counts the H200 measured fastest (docs/results/2026-12-03-session21.md
// §1; 32/8 heads, head_dim 128, 64-key blocks of 32 KiB of K and V, 132
// SMs). One wave of CTAs where the tiles leave room, more waves where the
// last one would run nearly empty.
TEST(DecodeSplitsTest, ThePickedCountsAreTheMeasuredBest) {
  constexpr int64_t kBlock = 64 * 256 * 2; // K + V of 64 keys, bytes
  struct Case {
    int64_t batch, seqKV;
    int splits;
  };
  for (Case c : {Case{1, 4096, 16}, Case{1, 65536, 16}, Case{2, 16384, 8},
                 Case{3, 16384, 5}, Case{4, 65536, 4}, Case{6, 16384, 5},
                 Case{8, 16384, 2}, Case{9, 16384, 5}, Case{12, 4096, 1},
                 Case{12, 16384, 4}, Case{16, 16384, 1}, Case{24, 8192, 2},
                 Case{32, 8192, 1}, Case{128, 1024, 1}})
    for (int64_t quads : {0, 128}) // without the merge; 4 rows x 128 / 4
      EXPECT_EQ(chooseDecodeSplits(8 * c.batch, c.seqKV / 64, kBlock, 132,
                                   false, quads),
                c.splits)
          << "batch " << c.batch << ", " << c.seqKV << " keys";
  // 136 tiles: one CTA each leaves 4 in a second wave; splitting wins.
  EXPECT_GT(chooseDecodeSplits(136, 256, kBlock, 132), 1);
  // One KV head at batch 1 (MQA 32/1: 32 rows, 1024 four-column units):
  // without the merge 128 splits; with it (one round trip per 16 splits
  // for each 128 units) fewer, where streaming and merging balance.
  EXPECT_EQ(chooseDecodeSplits(1, 2048, kBlock, 132), 128);
  // Measured (session 23 §2): 128K 16 / 32 / 64 / 128 splits 98.5 / 61.7 /
  // 50.3 / 57.8 us; 32K 32.2 / 27.4 / 30.7 / 44.0 us.
  EXPECT_EQ(chooseDecodeSplits(1, 2048, kBlock, 132, false, 1024), 64);
  EXPECT_EQ(chooseDecodeSplits(1, 512, kBlock, 132, false, 1024), 32);
  // Degenerate inputs: one split.
  EXPECT_EQ(chooseDecodeSplits(8, 1, kBlock, 132), 1);
  EXPECT_EQ(chooseDecodeSplits(0, 100, kBlock, 132), 1);
  EXPECT_EQ(chooseDecodeSplits(8, 100, kBlock, 0), 1);
  EXPECT_EQ(chooseDecodeSplits(100000, 1 << 20, kBlock, 132), 1);
  // Never more than half the blocks or 1024 splits.
  EXPECT_EQ(chooseDecodeSplits(1, 6, kBlock, 132), 3);
  EXPECT_LE(chooseDecodeSplits(1, 1 << 24, kBlock, 100000), 1024);
}

// Lean decode: C CTAs share the tiles x blocks KV blocks in shares of
// ceil(W / C) across tile boundaries (the kernel's mapping,
// KernelLowering::emitLeanItems, mirrored here): every block lies in
// exactly one part, each tile's parts are numbered 0 .. parts - 1 by
// consecutive CTAs, and no tile has more parts than leanSlots gives the
// workspace.
TEST(DecodeSplitsTest, LeanSharesCoverEveryBlockOnce) {
  for (int64_t tiles : {1, 3, 8, 64, 136, 528})
    for (int64_t blocks : {1, 2, 9, 63, 256, 2048})
      for (int64_t ctas : {1, 7, 132}) {
        int64_t total = tiles * blocks, c = std::min(ctas, total);
        int64_t per = (total + c - 1) / c;
        int slots = leanSlots(tiles, blocks, c);
        std::vector<int> seen(size_t(total), 0);
        std::vector<int64_t> parts(size_t(tiles), 0);
        for (int64_t cta = 0; cta < c; ++cta) {
          int64_t begin = std::min(cta * per, total);
          int64_t end = std::min(begin + per, total);
          if (begin >= end)
            continue;
          for (int64_t t = begin / blocks; t <= (end - 1) / blocks; ++t) {
            int64_t tb = t * blocks;
            int64_t lo = std::max(begin, tb) - tb;
            int64_t hi = std::min(end, tb + blocks) - tb;
            int64_t first = tb / per, last = (tb + blocks - 1) / per;
            ASSERT_EQ(cta - first, parts[size_t(t)]) << "tile " << t;
            ASSERT_LT(cta - first, last - first + 1);
            ++parts[size_t(t)];
            for (int64_t k = lo; k < hi; ++k)
              ++seen[size_t(tb + k)];
          }
        }
        for (int64_t t = 0; t < tiles; ++t) {
          int64_t tb = t * blocks;
          EXPECT_EQ(parts[size_t(t)], (tb + blocks - 1) / per - tb / per + 1);
          EXPECT_LE(parts[size_t(t)], slots)
              << tiles << " tiles x " << blocks << " blocks, " << c << " CTAs";
        }
        EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), total);
      }
  // One block per tile: never cut, no workspace.
  EXPECT_EQ(leanSlots(8, 1, 8), 1);
  // Batch 8 x 128K, 32/8 heads: 64 tiles x 2048 blocks over 132 CTAs
  // (993 blocks each): a tile spans 3 or 4 shares.
  EXPECT_EQ(leanSlots(64, 2048, 132), 4);
}

// Lean decode launched without a split count (chooseLeanSplits): one CTA
// per SM where the H200 measured lean faster than the split grid, the
// split model's count as tiles x s CTAs where the split grid was as fast or
// faster (docs/results/2026-12-04-session29.md §2; head_dim 128, 64-key
// blocks, cp.async K/V, 132 SMs, seq_q 1).
TEST(DecodeSplitsTest, LeanTakesOneCtaPerSmWhereTheWavesAreRagged) {
  constexpr int64_t kBlock = 64 * 256 * 2; // K + V of 64 keys, bytes
  struct Case {
    int64_t tiles, seqKV;
    bool lean; // one CTA per SM measured faster
  };
  for (Case c :
       {// 32/8: batch 17 x 4K-32K, 12 x 8K, 20 x 4K / 8K.
        Case{136, 16384, true}, Case{136, 8192, true}, Case{136, 4096, true},
        Case{136, 32768, true}, Case{96, 8192, true}, Case{160, 8192, true},
        Case{160, 4096, true},
        // 32/8: full waves, long CTAs or one wave.
        Case{104, 16384, false}, Case{104, 32768, false},
        Case{192, 8192, false}, Case{512, 4096, false}, Case{256, 4096, false},
        Case{384, 8192, false}, Case{256, 16384, false},
        Case{128, 16384, false}, Case{48, 32768, false},
        Case{24, 100000, false}, Case{64, 32768, false},
        Case{64, 131072, false}, Case{8, 131072, false}, Case{8, 8192, false},
        Case{8, 32768, false}, Case{16, 32768, false}, Case{32, 16384, false},
        Case{32, 65536, false},
        // 32/32 (MHA): batch 5 x 8K lean; 3 x 32K, 4 x 16K,
        // 8 x 8K, 16 x 4K, 1 x 32K the split grid.
        Case{160, 8192, true}, Case{96, 32768, false}, Case{128, 16384, false},
        Case{256, 8192, false}, Case{512, 4096, false},
        Case{32, 32768, false}}) {
    int64_t blocks = (c.seqKV + 63) / 64;
    int s = chooseLeanSplits(c.tiles, blocks, kBlock, 132, 128);
    EXPECT_EQ(s == 0, c.lean)
        << c.tiles << " tiles x " << c.seqKV << " keys: " << s;
    if (s > 0) // the split grid: the split model's count
      EXPECT_EQ(s,
                chooseDecodeSplits(c.tiles, blocks, kBlock, 132, false, 128));
  }
  // Degenerate inputs: one split, never 0.
  EXPECT_EQ(chooseLeanSplits(0, 100, kBlock, 132), 1);
  EXPECT_EQ(chooseLeanSplits(8, 0, kBlock, 132), 1);
  EXPECT_EQ(chooseLeanSplits(8, 100, kBlock, 0), 1);
}

TEST(AttentionKernelTest, UnloadedKernelAndContextAreReported) {
  AttentionKernel kernel;
  EXPECT_FALSE(kernel.valid());
  EXPECT_TRUE(failsWith(kernel.run(sampleArgs(), nullptr),
                        "attention kernel that is not loaded"));
  Context none;
  char image[16] = {};
  EXPECT_TRUE(
      failsWith(AttentionKernel::load(none, image, sizeof(image), sampleInfo(),
                                      sampleSpec(), &kernel),
                "the Context is not initialised"));
  KernelInfo bad = sampleInfo();
  bad.target = "sm_75";
  EXPECT_TRUE(failsWith(AttentionKernel::load(none, image, sizeof(image), bad,
                                              sampleSpec(), &kernel),
                        "invalid metadata: unknown target 'sm_75'"));
}

// load() runs checkSupported before it needs a driver: a .spec the compiler
// cannot build for the target describes no cubin.
TEST(AttentionKernelTest, LoadRefusesASpecTheCompilerDoesNotBuild) {
  Context none;
  AttentionKernel kernel;
  char image[16] = {};
  AttentionSpec hd96 = sampleSpec();
  hd96.headDim = hd96.headDimV = 96;
  ASSERT_EQ(hd96.validate(), "");
  EXPECT_TRUE(failsWith(
      AttentionKernel::load(none, image, sizeof(image), sampleInfo(), hd96,
                            &kernel),
      "the spec is not one the compiler builds for sm_90a: head_dim 96 is "
      "not supported on sm_90a"));
  AttentionSpec decode = sampleSpec();
  decode.phase = Phase::Decode;
  decode.numQHeads = 65 * 8; // 65 q heads per kv head: no token fits a tile
  EXPECT_TRUE(failsWith(AttentionKernel::load(none, image, sizeof(image),
                                              sampleInfo(), decode, &kernel),
                        "q_heads / kv_heads = 65 is not supported with phase "
                        "= decode"));
  KernelInfo blackwell = sampleInfo();
  blackwell.target = "sm_100a";
  AttentionSpec hd256 = sampleSpec();
  hd256.headDim = hd256.headDimV = 256;
  EXPECT_TRUE(failsWith(AttentionKernel::load(none, image, sizeof(image),
                                              blackwell, hd256, &kernel),
                        "head_dim 256 is not supported on sm_100a"));
  EXPECT_FALSE(kernel.valid());
}

TEST(AttentionKernelTest, LoadFilesNamesTheMissingFile) {
  TempDir dir;
  Context none;
  AttentionKernel kernel;
  std::string stem = dir.file("attn");
  EXPECT_TRUE(
      failsWith(AttentionKernel::loadFiles(none, stem, &kernel),
                "cannot open kernel metadata file '" + stem + ".meta'"));
  ASSERT_TRUE(succeeds(writeKernelInfo(stem + ".meta", sampleInfo())));
  EXPECT_TRUE(failsWith(AttentionKernel::loadFiles(none, stem, &kernel),
                        stem + ".spec"));
  writeFile(stem + ".spec", sampleSpec().toString());
  EXPECT_TRUE(failsWith(AttentionKernel::loadFiles(none, stem, &kernel),
                        "cannot open cubin '" + stem + ".cubin'"));
  writeFile(stem + ".spec", "head_dim = 96\nhead_dim_v = 64\n");
  writeFile(stem + ".cubin", "x");
  EXPECT_FALSE(AttentionKernel::loadFiles(none, stem, &kernel).ok());
}

//===----------------------------------------------------------------------===//
// The kernel's files and their content hash
//===----------------------------------------------------------------------===//

TEST(KernelFilesTest, Sha256KnownAnswers) {
  EXPECT_EQ(sha256Hex("", 0), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934"
                              "ca495991b7852b855");
  EXPECT_EQ(sha256Hex("abc", 3), "ba7816bf8f01cfea414140de5dae2223b00361a39617"
                                 "7a9cb410ff61f20015ad");
  const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  EXPECT_EQ(sha256Hex(two, std::strlen(two)),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  std::string million(1000000, 'a');
  EXPECT_EQ(sha256Hex(million.data(), million.size()),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

/// Writes stem.{cubin,spec,meta} as blasst-compile does, with the hash.
void writeKernelFilesWithHash(const std::string &stem, const std::string &cubin,
                              const std::string &specText, KernelInfo info) {
  info.contentSha256 =
      kernelContentHash(cubin.data(), cubin.size(), specText, info);
  writeFile(stem + ".cubin", cubin);
  writeFile(stem + ".spec", specText);
  ASSERT_TRUE(succeeds(writeKernelInfo(stem + ".meta", info)));
}

// Any change to one of the three files after they were written together is
// found without a driver: a flipped cubin byte, an edited spec, an edited
// threads or smem_bytes in the .meta.
TEST(KernelFilesTest, ContentHashCatchesEditsOfAnyFile) {
  TempDir dir;
  std::string stem = dir.file("k");
  KernelInfo info = sampleInfo();
  std::string cubin = tinyCubin(info.kernelName) + std::string(256, '\x42');
  std::string specText = sampleSpec().toString();
  writeKernelFilesWithHash(stem, cubin, specText, info);
  KernelFiles files;
  ASSERT_TRUE(succeeds(readKernelFiles(stem, &files)));
  EXPECT_EQ(files.cubin, cubin);
  EXPECT_EQ(files.specText, specText);
  EXPECT_EQ(files.spec, sampleSpec());
  EXPECT_EQ(files.info.contentSha256.size(), 64u);
  std::string meta;
  {
    std::ifstream in(stem + ".meta");
    meta.assign(std::istreambuf_iterator<char>(in), {});
  }
  EXPECT_NE(meta.find("content_sha256 = " + files.info.contentSha256 + "\n"),
            std::string::npos)
      << meta;

  auto expectMismatch = [&](const char *what) {
    SCOPED_TRACE(what);
    EXPECT_TRUE(failsWith(readKernelFiles(stem, &files),
                          "do not match the content hash their .meta "
                          "records"));
    writeKernelFilesWithHash(stem, cubin, specText, info); // repair
    ASSERT_TRUE(succeeds(readKernelFiles(stem, &files)));
  };
  std::string flipped = cubin;
  flipped[cubin.size() - 7] ^= 0x01; // inside the code, not the ELF headers
  writeFile(stem + ".cubin", flipped);
  expectMismatch("flipped cubin byte");
  AttentionSpec hd64 = sampleSpec();
  hd64.headDim = hd64.headDimV = 64;
  writeFile(stem + ".spec", hd64.toString());
  expectMismatch("edited spec");
  for (const char *edit : {"threads = 128", "smem_bytes = 1024"}) {
    std::string edited = meta;
    std::string key = std::string(edit).substr(0, std::string(edit).find(' '));
    size_t at = edited.find(key + " = ");
    ASSERT_NE(at, std::string::npos);
    edited.replace(at, edited.find('\n', at) - at, edit);
    writeFile(stem + ".meta", edited);
    expectMismatch(edit);
  }
  // A comment in the .meta changes no field: still the same kernel.
  writeFile(stem + ".meta", "# reviewed\n" + meta);
  EXPECT_TRUE(succeeds(readKernelFiles(stem, &files)));

  // Files without a hash (hand-written, or older) are read as before.
  ASSERT_TRUE(succeeds(writeKernelInfo(stem + ".meta", info)));
  EXPECT_TRUE(succeeds(readKernelFiles(stem, &files)));
  EXPECT_EQ(files.info.contentSha256, "");
  // A malformed hash is a metadata error with its line.
  std::string bad = meta;
  size_t at = bad.find("content_sha256 = ");
  bad.replace(at, std::string::npos, "content_sha256 = xyz\n");
  writeFile(stem + ".meta", bad);
  EXPECT_TRUE(failsWith(readKernelFiles(stem, &files),
                        "content_sha256 'xyz' is not 64 lowercase hex digits"));
  // The cubin check comes with the file's name.
  writeKernelFilesWithHash(stem, cubin.substr(0, 70), specText, info);
  EXPECT_TRUE(failsWith(readKernelFiles(stem, &files),
                        "bad cubin '" + stem + ".cubin' (70 bytes)"));
}

//===----------------------------------------------------------------------===//
// Launches and contexts through a fake driver (no GPU needed)
//===----------------------------------------------------------------------===//

/// Points the runtime at the fake libcuda of FakeDriver.cpp: one sm_90 "GPU"
/// whose launches are recorded, not run.
class FakeDriverTest : public ::testing::Test {
protected:
  void SetUp() override {
    handle = dlopen(BLASST_FAKE_DRIVER, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle, nullptr) << dlerror();
    setDriverLibraryForTesting(BLASST_FAKE_DRIVER);
    resolve("cuCtxSetCurrent", &setCurrent);
    resolve("cuCtxGetCurrent", &getCurrent);
    resolve("blasstFakeLaunches", &launches);
    resolve("blasstFakeLastThreshold", &lastThreshold);
    resolve("blasstFakeContextAtLaunch", &contextAtLaunch);
    ASSERT_TRUE(succeeds(Context::create(0, &ctx)));
  }
  void TearDown() override {
    ctx = Context();
    setDriverLibraryForTesting(nullptr);
    if (handle)
      dlclose(handle);
  }
  template <typename F> void resolve(const char *name, F **out) {
    *out = reinterpret_cast<F *>(dlsym(handle, name));
    ASSERT_NE(*out, nullptr) << name;
  }
  CUcontext currentContext() {
    CUcontext c = nullptr;
    getCurrent(&c);
    return c;
  }
  /// A sparse spec the compiler builds (ln_lambda = -3), loaded from a tiny
  /// cubin.
  static AttentionSpec sparseSpec() {
    AttentionSpec spec = sampleSpec();
    spec.sparsity = {SparsityKind::LnLambda, -3.0};
    return spec;
  }
  Status loadSparse(AttentionKernel *out) {
    std::string cubin = tinyCubin(sampleInfo().kernelName);
    return AttentionKernel::load(ctx, cubin.data(), cubin.size(), sampleInfo(),
                                 sparseSpec(), out);
  }

  void *handle = nullptr;
  CUresult (*setCurrent)(CUcontext) = nullptr;
  CUresult (*getCurrent)(CUcontext *) = nullptr;
  int (*launches)() = nullptr;
  float (*lastThreshold)() = nullptr;
  CUcontext (*contextAtLaunch)() = nullptr;
  Context ctx;
};

// run() without a threshold launches with the spec's (ln_lambda -3 ->
// -3 log2 e), not 0 (lambda = 1: every block below the running maximum
// would be skipped); prepare() takes NAN the same way.
TEST_F(FakeDriverTest, RunDefaultsToTheSpecsThreshold) {
  AttentionKernel kernel;
  ASSERT_TRUE(succeeds(loadSparse(&kernel)));
  const float spec = float(-3.0 * kLog2E);
  ASSERT_FLOAT_EQ(kernel.specLog2Threshold(), spec);
  int before = launches();
  ASSERT_TRUE(succeeds(kernel.run(sampleArgs(), nullptr)));
  EXPECT_EQ(launches(), before + 1);
  EXPECT_EQ(lastThreshold(), spec);
  ASSERT_TRUE(succeeds(kernel.run(sampleArgs(), nullptr, -1.5f)));
  EXPECT_EQ(lastThreshold(), -1.5f);
  AttentionLaunch prepared;
  ASSERT_TRUE(succeeds(kernel.prepare(sampleArgs(), NAN, &prepared)));
  EXPECT_EQ(prepared.log2Threshold, spec);
  ASSERT_TRUE(succeeds(kernel.prepare(sampleArgs(), 0.0f, &prepared)));
  EXPECT_EQ(prepared.log2Threshold, 0.0f);
}

// AttentionArgs::zeroStats: one cuMemsetD32Async over the counters
// ({visited, skipped} int64 per batch entry and head) before the kernel;
// without it, none.
TEST_F(FakeDriverTest, ZeroStatsMemsetsTheCountersBeforeTheLaunch) {
  int (*memsets)() = nullptr;
  void (*lastMemset)(uint64_t *, unsigned *, size_t *) = nullptr;
  resolve("blasstFakeMemsets", &memsets);
  resolve("blasstFakeLastMemset", &lastMemset);
  AttentionSpec spec = sparseSpec();
  spec.stats = true;
  std::string cubin = tinyCubin(sampleInfo().kernelName);
  AttentionKernel kernel;
  ASSERT_TRUE(succeeds(AttentionKernel::load(ctx, cubin.data(), cubin.size(),
                                             sampleInfo(), spec, &kernel)));
  AttentionArgs args = sampleArgs();
  args.stats = 0x7000000;
  int before = memsets(), launched = launches();
  ASSERT_TRUE(succeeds(kernel.run(args, nullptr)));
  EXPECT_EQ(memsets(), before) << "no zeroStats: the caller zeroed them";
  args.zeroStats = true;
  ASSERT_TRUE(succeeds(kernel.run(args, nullptr)));
  EXPECT_EQ(memsets(), before + 1);
  EXPECT_EQ(launches(), launched + 2);
  uint64_t ptr = 0;
  unsigned value = 1;
  size_t words = 0;
  lastMemset(&ptr, &value, &words);
  EXPECT_EQ(ptr, args.stats);
  EXPECT_EQ(value, 0u);
  EXPECT_EQ(words, size_t(args.batch * args.numQHeads * 4));
}

// A decode kernel's metadata (q_group 4, split_kv) and spec, for the fake
// driver's decode tests.
KernelInfo decodeInfo() {
  KernelInfo info = sampleInfo();
  info.blockM = 64;
  info.threads = 256;
  info.qGroup = 4;
  info.splitKV = 1;
  return info;
}
AttentionSpec decodeSpec() {
  AttentionSpec spec = sampleSpec();
  spec.phase = Phase::Decode;
  return spec;
}

// Persistent decode (.meta persistent with q_group): a 1-D grid of at most
// one CTA per SM walks the (batch, KV head, query tile, split) items; the
// split count and batch travel as parameters 19 and 20.
TEST_F(FakeDriverTest, PersistentDecodeGridAndParameters) {
  KernelInfo info = decodeInfo();
  info.persistent = 1;
  AttentionSpec spec = decodeSpec();
  std::string cubin = tinyCubin(info.kernelName);
  AttentionKernel kernel;
  ASSERT_TRUE(succeeds(AttentionKernel::load(ctx, cubin.data(), cubin.size(),
                                             info, spec, &kernel)));
  AttentionArgs a = sampleArgs(); // batch 2, 32 q / 8 kv heads
  a.seqQ = 4;
  a.seqKV = 5000; // 40 blocks of 128 keys, 16 tiles
  a.kvSplits = 3;
  size_t bytes = kernel.workspaceBytes(a);
  a.workspace = 0x50000000;
  a.workspaceBytes = bytes;
  AttentionLaunch prepared;
  ASSERT_TRUE(succeeds(kernel.prepare(a, NAN, &prepared)));
  EXPECT_EQ(prepared.grid.str(), "(48,1,1)") << "16 tiles x 3 splits";
  EXPECT_EQ(prepared.decodeSplits, 3);
  EXPECT_EQ(prepared.decodeBatch, 2);
  void *p[AttentionLaunch::kNumParams];
  prepared.fillParams(p);
  EXPECT_EQ(*static_cast<int32_t *>(p[19]), 3);
  EXPECT_EQ(*static_cast<int32_t *>(p[20]), 2);
  // More items than SMs: one CTA per SM.
  a.kvSplits = 20;
  a.workspaceBytes = kernel.workspaceBytes(a);
  ASSERT_TRUE(succeeds(kernel.prepare(a, NAN, &prepared)));
  EXPECT_EQ(prepared.grid.str(), "(132,1,1)");
  EXPECT_EQ(prepared.decodeSplits, 20);
  // The KV caches are not walked by persistent decode CTAs.
  KernelInfo paged = info;
  paged.perSeqKV = 1;
  EXPECT_TRUE(failsWith(AttentionKernel::load(ctx, cubin.data(), cubin.size(),
                                              paged, spec, &kernel),
                        "persistent decode (q_group with persistent) needs "
                        "split_kv over contiguous splits"));
}

// Splits that follow per-sequence lengths (.meta balanced_splits): a 1-D
// grid of the split grid's CTAs as the budget (parameter 19) plus one per
// tile (each tile takes at least one split; the kernel's CTAs past the
// tiles' splits return), the batch as parameter 20, a workspace slot per
// CTA of the grid, and never the merge kernel.
TEST_F(FakeDriverTest, BalancedSplitsGridAndParameters) {
  KernelInfo info = decodeInfo();
  info.perSeqKV = 1;
  info.balancedSplits = 2; // 2: it takes a budget of -S too
  AttentionSpec spec = decodeSpec();
  spec.kvPerSequence = true;
  std::string cubin = tinyCubin(info.kernelName);
  AttentionKernel kernel;
  ASSERT_TRUE(succeeds(AttentionKernel::load(ctx, cubin.data(), cubin.size(),
                                             info, spec, &kernel)));
  AttentionArgs a = sampleArgs(); // batch 2, 32 q / 8 kv heads
  a.seqQ = 1;
  a.seqKV = 5000; // 40 blocks of 128 keys, 16 tiles
  a.seqLensKV = 0x60000000;
  a.kvSplits = 3;
  size_t bytes = kernel.workspaceBytes(a);
  EXPECT_EQ(bytes, size_t(16 * 3 + 16) * 64 * 129 * 4 + 16 * 4);
  AttentionLaunch prepared;
  EXPECT_TRUE(failsWith(kernel.prepare(a, NAN, &prepared),
                        "needs a workspace of " + std::to_string(bytes)));
  a.workspace = 0x50000000;
  a.workspaceBytes = bytes;
  ASSERT_TRUE(succeeds(kernel.prepare(a, NAN, &prepared)));
  EXPECT_EQ(prepared.grid.str(), "(64,1,1)") << "16 tiles x 3 + 16";
  EXPECT_EQ(prepared.decodeSplits, 48);
  EXPECT_EQ(prepared.decodeBatch, 2);
  EXPECT_EQ(prepared.mergeGrid.x, 0u);
  void *p[AttentionLaunch::kNumParams];
  prepared.fillParams(p);
  EXPECT_EQ(*static_cast<int32_t *>(p[19]), 48);
  EXPECT_EQ(*static_cast<int32_t *>(p[20]), 2);
  EXPECT_EQ(kernel.launchKVSplits(a), 3);
  // One split asked for (what the C API asks for a launch without a
  // workspace): a budget of 1, every tile one split, no workspace.
  a.kvSplits = 1;
  EXPECT_EQ(kernel.workspaceBytes(a), 0u);
  a.workspace = 0;
  a.workspaceBytes = 0;
  ASSERT_TRUE(succeeds(kernel.prepare(a, NAN, &prepared)));
  EXPECT_EQ(prepared.grid.str(), "(17,1,1)");
  EXPECT_EQ(prepared.decodeSplits, 1);
  EXPECT_EQ(prepared.workspace, 0u);
  // The split model's count: the split grid's CTAs as the budget, a
  // workspace even where that count is 1 (a long sequence among short
  // ones takes several splits).
  a.kvSplits = 0;
  EXPECT_GT(kernel.workspaceBytes(a), 0u);
  a.workspace = 0x50000000;
  a.workspaceBytes = kernel.workspaceBytes(a);
  // More than two waves of tiles where the model picks one split: the
  // hardware's dispatch balances them, a budget of 1 and no workspace.
  {
    AttentionArgs many = a;
    many.batch = 40; // 320 tiles on the fake GPU's 132 SMs
    many.seqKV = 1000;
    many.workspace = 0;
    many.workspaceBytes = 0;
    EXPECT_EQ(kernel.workspaceBytes(many), 0u);
    ASSERT_TRUE(succeeds(kernel.prepare(many, NAN, &prepared)));
    EXPECT_EQ(prepared.grid.str(), "(321,1,1)");
    EXPECT_EQ(prepared.decodeSplits, 1);
    // Several splits past two waves: a budget of -S, every tile S splits
    // (the split grid's CTAs and workspace).
    many.batch = 17; // 136 tiles
    many.seqKV = 16384;
    int s = kernel.kvSplitsFor(many);
    ASSERT_GT(s, 1);
    ASSERT_GT(136 * s, 2 * 132);
    many.workspaceBytes = kernel.workspaceBytes(many);
    EXPECT_EQ(many.workspaceBytes,
              size_t(136 * s) * 64 * 129 * 4 + size_t(136) * 4);
    many.workspace = 0x50000000;
    ASSERT_TRUE(succeeds(kernel.prepare(many, NAN, &prepared)));
    EXPECT_EQ(prepared.grid.x, unsigned(136 * s));
    EXPECT_EQ(prepared.decodeSplits, -s);
    // The C API's round trip: the value to pass back is the caller's (0),
    // which gets -S again (S itself would be a budget of 136 x S).
    EXPECT_EQ(kernel.launchKVSplits(many), 0);
  }
  // The merge kernel is not there to ask for.
  a.splitMerge = SplitMerge::MergeKernel;
  EXPECT_TRUE(failsWith(kernel.prepare(a, NAN, &prepared),
                        "built without merge_kernel"));
  // The metadata refuses it beside what it does not build on.
  KernelInfo bad = info;
  bad.perSeqKV = 0;
  EXPECT_TRUE(failsWith(AttentionKernel::load(ctx, cubin.data(), cubin.size(),
                                              bad, decodeSpec(), &kernel),
                        "balanced_splits needs a one-CTA-per-split decode "
                        "kernel over per-sequence lengths"));
}

// Splits that follow the lengths with the merge kernel (.meta
// balanced_splits = 3, merge_kernel = 1; the default of BLASST decode over
// per-sequence lengths): where the merge kernel merges (asked for, or the
// split model's pick: seq_q 8 here) the launch takes a budget of -S, the
// split grid's tiles x S CTAs and slots on a 1-D grid, then <kernel>_merge
// on its usual grid (parameter 19 = -S, which it negates); otherwise the
// budget of the split grid's CTAs and the in-kernel merge.
TEST_F(FakeDriverTest, BalancedSplitsTakeTheMergeKernel) {
  KernelInfo info = decodeInfo();
  info.perSeqKV = 1;
  info.balancedSplits = 3;
  info.mergeKernel = 1;
  AttentionSpec spec = decodeSpec();
  spec.kvPerSequence = true;
  std::string cubin = tinyCubin(info.kernelName);
  AttentionKernel kernel;
  ASSERT_TRUE(succeeds(AttentionKernel::load(ctx, cubin.data(), cubin.size(),
                                             info, spec, &kernel)));
  void (*shape)(int, unsigned[3], unsigned *, int *) = nullptr;
  resolve("blasstFakeLaunchShape", &shape);
  AttentionArgs a = sampleArgs(); // batch 2, 32 q / 8 kv heads
  a.seqQ = 3;                     // 16 tiles; 4 x 3 rows: 12 merge CTAs
  a.seqKV = 5000;
  a.seqLensKV = 0x60000000;
  a.kvSplits = 5;
  a.splitMerge = SplitMerge::MergeKernel;
  size_t bytes = kernel.workspaceBytes(a);
  EXPECT_EQ(bytes, size_t(16 * 5) * 64 * 129 * 4 + 16 * 4)
      << "the split grid's slots";
  a.workspace = 0x50000000;
  a.workspaceBytes = bytes;
  AttentionLaunch prepared;
  ASSERT_TRUE(succeeds(kernel.prepare(a, NAN, &prepared)));
  EXPECT_EQ(prepared.grid.str(), "(80,1,1)") << "16 tiles x 5";
  EXPECT_EQ(prepared.decodeSplits, -5);
  EXPECT_EQ(prepared.decodeBatch, 2);
  EXPECT_EQ(prepared.mergeGrid.str(), "(12,8,2)");
  EXPECT_EQ(prepared.mergeLaunch, 1);
  void *p[AttentionLaunch::kNumParams];
  prepared.fillParams(p);
  EXPECT_EQ(*static_cast<int32_t *>(p[19]), -5);
  EXPECT_EQ(*static_cast<int32_t *>(p[21]), 1);
  int before = launches();
  ASSERT_TRUE(succeeds(kernel.launch(prepared, nullptr)));
  EXPECT_EQ(launches(), before + 2);
  unsigned grid[3], block;
  int dependent;
  shape(0, grid, &block, &dependent);
  EXPECT_EQ(grid[0], 12u);
  EXPECT_EQ(dependent, 1);
  // Merged in the kernel: the split grid's CTAs as the budget.
  a.splitMerge = SplitMerge::InKernel;
  a.workspaceBytes = kernel.workspaceBytes(a);
  ASSERT_TRUE(succeeds(kernel.prepare(a, NAN, &prepared)));
  EXPECT_EQ(prepared.grid.str(), "(96,1,1)") << "budget 80 + 16 tiles";
  EXPECT_EQ(prepared.decodeSplits, 80);
  EXPECT_EQ(prepared.mergeLaunch, 0);
  EXPECT_EQ(prepared.mergeGrid.x, 0u);
  // The split model's count and merge: seq_q 8 (32 rows) pairs its splits
  // with the merge kernel, seq_q 1 (4 rows) with the last split's merge.
  a.splitMerge = SplitMerge::Auto;
  a.kvSplits = 0;
  a.seqQ = 8;
  DecodeSplits pick = kernel.decodeSplitsFor(a);
  ASSERT_GT(pick.splits, 1);
  EXPECT_TRUE(pick.mergeKernel);
  EXPECT_EQ(pick.balancedBudget, -pick.splits);
  EXPECT_EQ(kernel.launchKVSplits(a), 0) << "the C API's round trip";
  a.seqQ = 1;
  pick = kernel.decodeSplitsFor(a);
  EXPECT_FALSE(pick.mergeKernel);
  EXPECT_EQ(pick.balancedBudget, 16 * pick.splits);
  // Kernels of balanced_splits 1-2 have no merge kernel for their splits.
  KernelInfo old = info;
  old.balancedSplits = 2;
  EXPECT_TRUE(failsWith(AttentionKernel::load(ctx, cubin.data(), cubin.size(),
                                              old, spec, &kernel),
                        "only balanced_splits = 3 kernels have a merge "
                        "kernel"));
}

// Lean decode (.meta lean, here with kv_cp_async): without a split count
// the grid is one CTA per SM where the split grid's waves are ragged, else
// the split model's tiles x s CTAs; kvSplits = s asks for tiles x s. The
// workspace's slots per tile follow the grid (leanSlots).
TEST_F(FakeDriverTest, LeanDecodeGridFollowsTheWaves) {
  KernelInfo info = decodeInfo();
  info.persistent = 1;
  info.lean = 1;
  info.kvCpAsync = 1;
  info.blockN = 64;
  AttentionSpec spec = decodeSpec();
  std::string cubin = tinyCubin(info.kernelName);
  AttentionKernel kernel;
  ASSERT_TRUE(succeeds(AttentionKernel::load(ctx, cubin.data(), cubin.size(),
                                             info, spec, &kernel)));
  AttentionArgs a = sampleArgs(); // 32 q / 8 kv heads
  a.seqQ = 1;
  a.workspace = 0x50000000;
  a.workspaceBytes = size_t(1) << 30;
  AttentionLaunch prepared;
  // Batch 17 x 16K: 136 tiles, the split grid's 6 x 136 CTAs run 7 waves
  // of 132, the last a fifth full: one CTA per SM.
  a.batch = 17;
  a.seqKV = 16384;
  ASSERT_TRUE(succeeds(kernel.prepare(a, NAN, &prepared)));
  EXPECT_EQ(prepared.grid.str(), "(132,1,1)");
  EXPECT_EQ(kernel.kvSplitsFor(a), leanSlots(136, 256, 132));
  // The count that asks for this launch again is the one asked with (0),
  // not the slot count (which would ask for 136 x slots CTAs).
  EXPECT_EQ(kernel.launchKVSplits(a), 0);
  // Batch 8 x 32K: 64 tiles, 2 splits fill one wave: 128 CTAs, each a
  // tile's half (leanSlots' bound: 3 slots per tile).
  a.batch = 8;
  a.seqKV = 32768;
  ASSERT_TRUE(succeeds(kernel.prepare(a, NAN, &prepared)));
  EXPECT_EQ(prepared.grid.str(), "(128,1,1)");
  EXPECT_EQ(kernel.kvSplitsFor(a), leanSlots(64, 512, 128));
  // Asked for: 3 shares per tile's worth of CTAs.
  a.kvSplits = 3;
  ASSERT_TRUE(succeeds(kernel.prepare(a, NAN, &prepared)));
  EXPECT_EQ(prepared.grid.str(), "(192,1,1)");
  EXPECT_EQ(kernel.kvSplitsFor(a), leanSlots(64, 512, 192));
  EXPECT_EQ(kernel.launchKVSplits(a), 3);
  // Two workspace slots per CTA (its first and last part), a counter a
  // tile.
  EXPECT_EQ(kernel.workspaceBytes(a), size_t(2 * 192) * 64 * 129 * 4 + 64 * 4);
  // Never more CTAs than blocks: batch 1 x 100 keys is 8 tiles x 2 blocks.
  a.batch = 1;
  a.seqKV = 100;
  a.kvSplits = 40;
  ASSERT_TRUE(succeeds(kernel.prepare(a, NAN, &prepared)));
  EXPECT_EQ(prepared.grid.str(), "(16,1,1)");
}

// A prefill kernel with a short-sequence entry (.meta short_block_n,
// `<kernel>_short`): the runtime launches the entry where the kernel's wide
// KV blocks would compute over 4% more padded keys, with K/V boxes of the
// entry's rows, and the kernel itself elsewhere.
TEST_F(FakeDriverTest, ShortEntryTakesPaddedShortSequences) {
  KernelInfo info = sampleInfo();
  info.blockN = 192;
  info.shortBlockN = 128;
  AttentionSpec spec = sampleSpec();
  spec.causal = false;
  std::string cubin = tinyCubin(info.kernelName);
  AttentionKernel kernel;
  ASSERT_TRUE(succeeds(AttentionKernel::load(ctx, cubin.data(), cubin.size(),
                                             info, spec, &kernel)));
  auto box = [](const CUtensorMap &m, int i) {
    uint32_t b = 0;
    std::memcpy(&b, reinterpret_cast<const char *>(&m) + 64 + 4 * i, 4);
    return b;
  };
  AttentionArgs a = sampleArgs();
  AttentionLaunch prepared;
  // 1024 keys: 6 blocks of 192 (1152 keys) against 8 of 128.
  a.seqQ = a.seqKV = 1024;
  a.setContiguousStrides();
  ASSERT_TRUE(succeeds(kernel.prepare(a, NAN, &prepared)));
  EXPECT_TRUE(prepared.shortEntry);
  EXPECT_EQ(prepared.grid.str(), "(8,32,2)");
  EXPECT_EQ(box(prepared.tmK, 2), 128u);
  EXPECT_EQ(box(prepared.tmV, 2), 128u);
  EXPECT_EQ(box(prepared.tmQ, 2), 128u);
  // 1536 and 16K keys: as many or under 4% more keys: the kernel itself.
  for (int64_t seq : {1536, 16384}) {
    a.seqQ = a.seqKV = seq;
    a.setContiguousStrides();
    ASSERT_TRUE(succeeds(kernel.prepare(a, NAN, &prepared)));
    EXPECT_FALSE(prepared.shortEntry) << seq;
    EXPECT_EQ(box(prepared.tmK, 2), 192u) << seq;
  }
  // The rule itself: causal tiles up to their last row (bottom-right).
  EXPECT_TRUE(chooseShortEntry(1024, 1024, false, 128, 192, 128));
  EXPECT_FALSE(chooseShortEntry(2048, 2048, false, 128, 192, 128));
  EXPECT_TRUE(chooseShortEntry(2048, 2048, true, 128, 176, 128));
  EXPECT_FALSE(chooseShortEntry(16384, 16384, true, 128, 176, 128));
  EXPECT_FALSE(chooseShortEntry(1024, 1024, false, 128, 128, 128));
  EXPECT_FALSE(chooseShortEntry(0, 1024, false, 128, 192, 128));
  // The metadata: prefill kernels with wider blocks only.
  KernelInfo decode = decodeInfo();
  decode.shortBlockN = 32;
  EXPECT_TRUE(failsWith(validateKernelInfo(decode),
                        "short_block_n = 32 needs a one-CTA-per-tile "
                        "prefill kernel"));
  KernelInfo wider = info;
  wider.shortBlockN = 192;
  EXPECT_TRUE(failsWith(validateKernelInfo(wider),
                        "with wider KV blocks (block_n = 192)"));
  std::string text = formatKernelInfo(info);
  EXPECT_NE(text.find("short_block_n = 128\n"), std::string::npos) << text;
  KernelInfo parsed;
  ASSERT_TRUE(succeeds(parseKernelInfo(text, "k.meta", &parsed)));
  EXPECT_EQ(parsed.shortBlockN, 128);
  EXPECT_EQ(formatKernelInfo(sampleInfo()).find("short_block_n"),
            std::string::npos);
}

// Head_dim 64's short-sequence entry runs two CTAs per SM (.meta
// short_ctas_per_sm = 2, 64-key blocks): taken where the query tiles
// average at most kShortEntryTwoCtaMaxKeys keys, whatever the padding.
TEST_F(FakeDriverTest, TwoCtaShortEntryTakesShortTiles) {
  KernelInfo info = sampleInfo();
  info.blockN = 128;
  info.shortBlockN = 64;
  info.shortCtasPerSM = 2;
  info.shortSmemBytes = 82032; // launched with its own
  AttentionSpec spec = sampleSpec();
  spec.headDim = spec.headDimV = 64;
  spec.causal = true;
  std::string cubin = tinyCubin(info.kernelName);
  AttentionKernel kernel;
  ASSERT_TRUE(succeeds(AttentionKernel::load(ctx, cubin.data(), cubin.size(),
                                             info, spec, &kernel)));
  AttentionArgs a = sampleArgs();
  a.headDim = 64;
  AttentionLaunch prepared;
  // Causal 4K: tiles average 2112 keys: the entry, with 64-row K/V boxes.
  a.seqQ = a.seqKV = 4096;
  a.setContiguousStrides();
  ASSERT_TRUE(succeeds(kernel.prepare(a, NAN, &prepared)));
  EXPECT_TRUE(prepared.shortEntry);
  EXPECT_EQ(prepared.grid.str(), "(32,32,2)");
  EXPECT_EQ(prepared.smemBytes, 82032u);
  uint32_t kBox = 0;
  std::memcpy(&kBox, reinterpret_cast<const char *>(&prepared.tmK) + 72, 4);
  EXPECT_EQ(kBox, 64u);
  // Causal 8K averages 4160: the kernel.
  a.seqQ = a.seqKV = 8192;
  a.setContiguousStrides();
  ASSERT_TRUE(succeeds(kernel.prepare(a, NAN, &prepared)));
  EXPECT_FALSE(prepared.shortEntry);
  EXPECT_EQ(prepared.smemBytes, 196608u);
  // The rule: no padding needed (1024 keys in 128 or 64), the mean decides.
  EXPECT_TRUE(chooseShortEntry(1024, 1024, false, 128, 128, 64, 2));
  EXPECT_TRUE(chooseShortEntry(3072, 3072, false, 128, 128, 64, 2));
  EXPECT_FALSE(chooseShortEntry(4096, 4096, false, 128, 128, 64, 2));
  EXPECT_TRUE(chooseShortEntry(6000, 6000, true, 128, 128, 64, 2));
  EXPECT_FALSE(chooseShortEntry(16384, 16384, true, 128, 128, 64, 2));
  EXPECT_FALSE(chooseShortEntry(1024, 1024, false, 128, 128, 64, 1));
  // The metadata: only beside a short-sequence entry; 1 or 2.
  KernelInfo lone = sampleInfo();
  lone.shortCtasPerSM = 2;
  EXPECT_TRUE(failsWith(validateKernelInfo(lone),
                        "short_ctas_per_sm needs a short-sequence entry"));
  KernelInfo big = info;
  big.shortSmemBytes = 115713;
  EXPECT_TRUE(failsWith(validateKernelInfo(big),
                        "the short-sequence entry's 115713 B of shared "
                        "memory do not fit 2 CTAs per SM (at most 115712"));
  big.shortSmemBytes = 0; // then smem_bytes, 196608, is its size
  EXPECT_TRUE(failsWith(validateKernelInfo(big), "196608 B"));
  std::string text = formatKernelInfo(info);
  EXPECT_NE(text.find("short_ctas_per_sm = 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("short_smem_bytes = 82032\n"), std::string::npos) << text;
  KernelInfo parsed;
  ASSERT_TRUE(succeeds(parseKernelInfo(text, "k.meta", &parsed)));
  EXPECT_EQ(parsed.shortCtasPerSM, 2);
  EXPECT_EQ(parsed.shortSmemBytes, 82032);
  std::string three = text;
  three.replace(three.find("short_ctas_per_sm = 2"), 21,
                "short_ctas_per_sm = 3");
  EXPECT_TRUE(failsWith(parseKernelInfo(three, "k.meta", &parsed),
                        "short_ctas_per_sm"));
  EXPECT_EQ(formatKernelInfo(sampleInfo()).find("short_ctas_per_sm"),
            std::string::npos);
}

// Head_dim 128's dense entry is persistent (.meta short_persistent = 1,
// 128-key blocks): taken where no query tile has more than
// kShortEntryPersistentMaxKeys keys, with a persistent grid (one CTA per SM
// of each batch entry's share).
TEST_F(FakeDriverTest, PersistentShortEntryTakesTilesUpTo4K) {
  KernelInfo info = sampleInfo();
  info.blockN = 176;
  info.shortBlockN = 128;
  info.shortPersistent = 1;
  AttentionSpec spec = sampleSpec();
  spec.causal = true;
  std::string cubin = tinyCubin(info.kernelName);
  AttentionKernel kernel;
  ASSERT_TRUE(succeeds(AttentionKernel::load(ctx, cubin.data(), cubin.size(),
                                             info, spec, &kernel)));
  AttentionArgs a = sampleArgs();
  AttentionLaunch prepared;
  // Causal 4K: the longest tile has 4096 keys: the entry, 66 CTAs for each
  // of the 2 batch entries on the fake GPU's 132 SMs, 128-row K/V boxes.
  a.seqQ = a.seqKV = 4096;
  a.setContiguousStrides();
  ASSERT_TRUE(succeeds(kernel.prepare(a, NAN, &prepared)));
  EXPECT_TRUE(prepared.shortEntry);
  EXPECT_EQ(prepared.grid.str(), "(66,1,2)");
  uint32_t kBox = 0;
  std::memcpy(&kBox, reinterpret_cast<const char *>(&prepared.tmK) + 72, 4);
  EXPECT_EQ(kBox, 128u);
  // Fewer tiles than CTAs: one CTA per tile.
  a.seqQ = 128;
  a.numQHeads = 32;
  a.setContiguousStrides();
  ASSERT_TRUE(succeeds(kernel.prepare(a, NAN, &prepared)));
  EXPECT_TRUE(prepared.shortEntry);
  EXPECT_EQ(prepared.grid.str(), "(32,1,2)");
  // Causal 8K: the last tile has 8192 keys: the kernel, one CTA per tile.
  a.seqQ = a.seqKV = 8192;
  a.setContiguousStrides();
  ASSERT_TRUE(succeeds(kernel.prepare(a, NAN, &prepared)));
  EXPECT_FALSE(prepared.shortEntry);
  EXPECT_EQ(prepared.grid.str(), "(64,32,2)");
  // The rule: the longest tile's keys in 128-key blocks, causal or not.
  EXPECT_TRUE(chooseShortEntry(1024, 1024, false, 128, 192, 128, 1, true));
  EXPECT_TRUE(chooseShortEntry(4096, 4096, false, 128, 192, 128, 1, true));
  EXPECT_FALSE(chooseShortEntry(4097, 4097, false, 128, 192, 128, 1, true));
  EXPECT_FALSE(chooseShortEntry(8192, 8192, true, 128, 176, 128, 1, true));
  EXPECT_TRUE(chooseShortEntry(512, 4000, true, 128, 176, 128, 1, true));
  EXPECT_FALSE(chooseShortEntry(512, 16384, false, 128, 192, 128, 1, true));
  // The metadata: beside a short-sequence entry of one CTA per SM only.
  KernelInfo lone = sampleInfo();
  lone.shortPersistent = 1;
  EXPECT_TRUE(failsWith(validateKernelInfo(lone),
                        "short_persistent needs a short-sequence entry"));
  KernelInfo two = info;
  two.shortCtasPerSM = 2;
  EXPECT_TRUE(failsWith(validateKernelInfo(two),
                        "short_persistent = 1 needs short_ctas_per_sm = 1"));
  std::string text = formatKernelInfo(info);
  EXPECT_NE(text.find("short_persistent = 1\n"), std::string::npos) << text;
  KernelInfo parsed;
  ASSERT_TRUE(succeeds(parseKernelInfo(text, "k.meta", &parsed)));
  EXPECT_EQ(parsed.shortPersistent, 1);
  EXPECT_EQ(formatKernelInfo(sampleInfo()).find("short_persistent"),
            std::string::npos);
}

// A cp.async decode kernel with a TMA entry (.meta tma_entry, `<kernel>_tma`):
// on a GPU of under kTmaDecodeMaxBytesPerSecond of DRAM bandwidth (an
// H100's 3.35 TB/s) its split-grid launches run the entry, with the same
// grid, parameters and merge kernel; a ragged launch still takes the lean
// entry. On an H200 (4.9 TB/s, the fake driver's default) or where the
// driver does not say, the kernel itself.
TEST_F(FakeDriverTest, TmaEntryTakesSplitGridsOnSlowerDram) {
  void (*setMemory)(int, int) = nullptr;
  const char *(*launched)(int) = nullptr;
  resolve("blasstFakeSetMemory", &setMemory);
  resolve("blasstFakeLaunchedFunction", &launched);
  KernelInfo info = decodeInfo();
  info.kvCpAsync = 1;
  info.mergeKernel = 1;
  info.leanEntry = 1;
  info.tmaEntry = 1;
  info.blockN = 64;
  AttentionSpec spec = decodeSpec();
  std::string cubin = tinyCubin(info.kernelName);
  AttentionArgs a = sampleArgs(); // 32 q / 8 kv heads
  a.seqQ = 1;
  a.batch = 8;
  a.seqKV = 32768;
  a.workspace = 0x50000000;
  a.workspaceBytes = size_t(1) << 30;
  a.splitMerge = SplitMerge::MergeKernel;

  // The rule and the bandwidth: 2 x clock x bus width / 8.
  DeviceInfo h100;
  h100.memoryClockKHz = 2619000;
  h100.memoryBusWidthBits = 5120;
  EXPECT_NEAR(h100.dramBytesPerSecond(), 3.352e12, 1e9);
  EXPECT_TRUE(preferTmaDecode(h100.dramBytesPerSecond()));
  EXPECT_FALSE(preferTmaDecode(4.8e12));
  EXPECT_FALSE(preferTmaDecode(DeviceInfo().dramBytesPerSecond()));

  // The fake driver's default is an H200's memory: the kernel itself.
  EXPECT_NEAR(ctx.info().dramBytesPerSecond(), 4.917e12, 1e9);
  AttentionKernel fast;
  ASSERT_TRUE(succeeds(AttentionKernel::load(ctx, cubin.data(), cubin.size(),
                                             info, spec, &fast)));
  EXPECT_FALSE(fast.takesTmaEntry());
  AttentionLaunch prepared;
  ASSERT_TRUE(succeeds(fast.prepare(a, NAN, &prepared)));
  EXPECT_FALSE(prepared.tmaEntry);
  ASSERT_TRUE(succeeds(fast.launch(prepared, nullptr)));
  EXPECT_EQ(std::string(launched(1)), info.kernelName);

  // An H100's memory: the split grid runs <kernel>_tma, then the merge.
  Context slow; // outlives the kernel loaded into it
  setMemory(2619000, 5120);
  Status created = Context::create(0, &slow);
  setMemory(3201000, 6144);
  ASSERT_TRUE(succeeds(created));
  AttentionKernel kernel;
  ASSERT_TRUE(succeeds(AttentionKernel::load(slow, cubin.data(), cubin.size(),
                                             info, spec, &kernel)));
  EXPECT_TRUE(kernel.takesTmaEntry());
  ASSERT_TRUE(succeeds(kernel.prepare(a, NAN, &prepared)));
  EXPECT_TRUE(prepared.tmaEntry);
  EXPECT_EQ(prepared.grid.str(), "(2,8,8)");
  EXPECT_GT(prepared.mergeGrid.x, 0u);
  ASSERT_TRUE(succeeds(kernel.launch(prepared, nullptr)));
  EXPECT_EQ(std::string(launched(1)), info.kernelName + "_tma");
  EXPECT_EQ(std::string(launched(0)), info.kernelName + "_merge");
  // Ragged waves (batch 17 x 16K): the lean entry, not the TMA entry.
  a.batch = 17;
  a.seqKV = 16384;
  a.splitMerge = SplitMerge::Auto;
  ASSERT_TRUE(succeeds(kernel.prepare(a, NAN, &prepared)));
  EXPECT_TRUE(prepared.leanEntry);
  EXPECT_FALSE(prepared.tmaEntry);

  // A driver that does not say: unknown, the kernel itself.
  Context unknown;
  setMemory(0, 0);
  created = Context::create(0, &unknown);
  setMemory(3201000, 6144);
  ASSERT_TRUE(succeeds(created));
  EXPECT_EQ(unknown.info().dramBytesPerSecond(), 0.0);
  AttentionKernel unsure;
  ASSERT_TRUE(succeeds(AttentionKernel::load(
      unknown, cubin.data(), cubin.size(), info, spec, &unsure)));
  EXPECT_FALSE(unsure.takesTmaEntry());

  // The metadata: written only when set, read back; only beside a
  // cp.async split grid.
  std::string text = formatKernelInfo(info);
  EXPECT_NE(text.find("tma_entry = 1\n"), std::string::npos) << text;
  KernelInfo parsed;
  ASSERT_TRUE(succeeds(parseKernelInfo(text, "k.meta", &parsed)));
  EXPECT_EQ(parsed.tmaEntry, 1);
  EXPECT_EQ(formatKernelInfo(decodeInfo()).find("tma_entry"),
            std::string::npos);
  KernelInfo bad = info;
  bad.kvCpAsync = 0;
  EXPECT_TRUE(failsWith(validateKernelInfo(bad),
                        "tma_entry needs a one-CTA-per-split decode kernel "
                        "copying K/V with cp.async"));
  bad = info;
  bad.balancedSplits = 1;
  bad.perSeqKV = 1;
  bad.leanEntry = 0;
  EXPECT_TRUE(failsWith(validateKernelInfo(bad), "tma_entry needs"));
}

// A decode kernel with a lean entry (.meta lean_entry, `<kernel>_lean`):
// the runtime launches the lean entry where the split grid it would take has
// ragged waves (leanBeatsSplitGrid), one CTA per SM, whichever merge the
// split model paired with that grid, and the kernel itself elsewhere, with a
// split count asked for, or with the merge kernel asked for.
TEST_F(FakeDriverTest, LeanEntryTakesRaggedLaunches) {
  KernelInfo info = decodeInfo();
  info.kvCpAsync = 1;
  info.mergeKernel = 1;
  info.leanEntry = 1;
  info.blockN = 64;
  AttentionSpec spec = decodeSpec();
  std::string cubin = tinyCubin(info.kernelName);
  AttentionKernel kernel;
  ASSERT_TRUE(succeeds(AttentionKernel::load(ctx, cubin.data(), cubin.size(),
                                             info, spec, &kernel)));
  AttentionArgs a = sampleArgs(); // 32 q / 8 kv heads
  a.seqQ = 1;
  a.workspace = 0x50000000;
  a.workspaceBytes = size_t(1) << 30;
  AttentionLaunch prepared;
  // Batch 17 x 16K: 6 splits of 136 tiles run 7 waves, the last a fifth
  // full: the lean entry on 132 CTAs, parameter 19 the slots per tile.
  a.batch = 17;
  a.seqKV = 16384;
  ASSERT_TRUE(succeeds(kernel.prepare(a, NAN, &prepared)));
  EXPECT_TRUE(prepared.leanEntry);
  EXPECT_EQ(prepared.grid.str(), "(132,1,1)");
  EXPECT_EQ(prepared.decodeSplits, leanSlots(136, 256, 132));
  EXPECT_EQ(prepared.decodeBatch, 17);
  EXPECT_EQ(prepared.mergeGrid.x, 0u);
  EXPECT_TRUE(kernel.decodeSplitsFor(a).lean);
  EXPECT_EQ(kernel.workspaceBytes(a), size_t(2 * 132) * 64 * 129 * 4 + 136 * 4);
  // Asked for again with kvSplits 0 (launchKVSplits): a pinned count turns
  // the entry off (below).
  EXPECT_EQ(kernel.launchKVSplits(a), 0);
  // Batch 8 x 32K: 2 splits fill one wave: the kernel itself.
  a.batch = 8;
  a.seqKV = 32768;
  ASSERT_TRUE(succeeds(kernel.prepare(a, NAN, &prepared)));
  EXPECT_FALSE(prepared.leanEntry);
  EXPECT_EQ(prepared.grid.str(), "(2,8,8)");
  EXPECT_EQ(kernel.launchKVSplits(a), 2);
  // A split count asked for, or the merge kernel: the kernel itself.
  a.batch = 17;
  a.seqKV = 16384;
  a.kvSplits = 6;
  ASSERT_TRUE(succeeds(kernel.prepare(a, NAN, &prepared)));
  EXPECT_FALSE(prepared.leanEntry);
  EXPECT_EQ(prepared.grid.str(), "(6,8,17)");
  EXPECT_EQ(kernel.launchKVSplits(a), 6);
  a.kvSplits = 0;
  a.splitMerge = SplitMerge::MergeKernel;
  ASSERT_TRUE(succeeds(kernel.prepare(a, NAN, &prepared)));
  EXPECT_FALSE(prepared.leanEntry);
  EXPECT_GT(prepared.mergeGrid.x, 0u);
  // Seq_q 8 (32 rows a tile): the split model pairs its grid with the
  // merge kernel; ragged, so the lean entry (merging in the kernel) anyway.
  a.splitMerge = SplitMerge::Auto;
  a.seqQ = 8;
  {
    KernelInfo splitOnly = info;
    splitOnly.leanEntry = 0;
    AttentionKernel alone;
    ASSERT_TRUE(succeeds(AttentionKernel::load(ctx, cubin.data(), cubin.size(),
                                               splitOnly, spec, &alone)));
    EXPECT_TRUE(alone.decodeSplitsFor(a).mergeKernel);
  }
  EXPECT_TRUE(kernel.decodeSplitsFor(a).lean);
  ASSERT_TRUE(succeeds(kernel.prepare(a, NAN, &prepared)));
  EXPECT_TRUE(prepared.leanEntry);
  EXPECT_EQ(prepared.mergeGrid.x, 0u);
  // The metadata refuses a lean entry beside kernels lean does not build.
  KernelInfo bad = info;
  bad.kvSplits = 4;
  EXPECT_TRUE(failsWith(AttentionKernel::load(ctx, cubin.data(), cubin.size(),
                                              bad, spec, &kernel),
                        "lean_entry needs a one-CTA-per-split decode kernel"));
}

// The lean entry beside a paged decode kernel (one length, pages of 64):
// a ragged launch takes <kernel>_lean with the same table parameters (its
// parts read their tiles' table rows). Beside per-sequence lengths the
// entry takes every launch: a full wave as the split grid's CTAs, a
// ragged one at one CTA per SM, always with a workspace of two slots per
// CTA (which tiles span CTAs depends on the lengths on the device).
TEST_F(FakeDriverTest, LeanEntryTakesPagedLaunches) {
  void (*lastKVCache)(uint64_t *) = nullptr;
  resolve("blasstFakeLastKVCache", &lastKVCache);
  KernelInfo info = pagedDecodeInfo();
  info.perSeqKV = 0;
  info.pageSize = 64;
  info.kvCpAsync = 1;
  info.mergeKernel = 1;
  info.leanEntry = 1;
  AttentionSpec spec = pagedDecodeSpec();
  spec.kvPerSequence = false;
  spec.kvPageSize = 64;
  std::string cubin = tinyCubin(info.kernelName);
  AttentionKernel kernel;
  ASSERT_TRUE(succeeds(AttentionKernel::load(ctx, cubin.data(), cubin.size(),
                                             info, spec, &kernel)));
  // Batch 17 x 16K over [4352 pages, 64 tokens, 8 heads, 128], 256 columns.
  AttentionArgs a = sampleArgs();
  a.batch = 17;
  a.seqQ = 1;
  a.seqKV = 16384;
  a.blockTable = 0x70000000;
  a.maxPages = 256;
  a.numPages = 17 * 256;
  int64_t row = 8 * 128;
  a.kStrides = a.vStrides = {64 * row, row, 128};
  a.workspace = 0x50000000;
  a.workspaceBytes = size_t(1) << 30;
  AttentionLaunch prepared;
  ASSERT_TRUE(succeeds(kernel.prepare(a, NAN, &prepared)));
  EXPECT_TRUE(prepared.leanEntry);
  EXPECT_EQ(prepared.grid.str(), "(132,1,1)");
  EXPECT_EQ(prepared.decodeSplits, leanSlots(136, 256, 132));
  ASSERT_TRUE(succeeds(kernel.launch(prepared, nullptr)));
  uint64_t kv[3] = {};
  lastKVCache(kv);
  EXPECT_EQ(kv[1], 0x70000000u);
  EXPECT_EQ(kv[2], 256u);
  // Batch 8 x 32K fills its waves: the kernel itself.
  a.batch = 8;
  a.seqKV = 32768;
  a.maxPages = 512;
  a.numPages = 8 * 512;
  ASSERT_TRUE(succeeds(kernel.prepare(a, NAN, &prepared)));
  EXPECT_FALSE(prepared.leanEntry);
  KernelInfo perSeq = info;
  perSeq.perSeqKV = 1;
  AttentionSpec perSeqSpec = spec;
  perSeqSpec.kvPerSequence = true;
  ASSERT_TRUE(succeeds(AttentionKernel::load(ctx, cubin.data(), cubin.size(),
                                             perSeq, perSeqSpec, &kernel)));
  a.seqLensKV = 0x60000000u;
  ASSERT_TRUE(succeeds(kernel.prepare(a, NAN, &prepared)));
  EXPECT_TRUE(prepared.leanEntry);
  EXPECT_EQ(prepared.grid.str(), "(128,1,1)");
  EXPECT_EQ(prepared.decodeBatch, 8);
  EXPECT_EQ(kernel.kvSplitsFor(a), 2);
  EXPECT_EQ(kernel.workspaceBytes(a), size_t(2 * 128) * 64 * 129 * 4 + 64 * 4);
  // The grid a launch of `batch` sequences bounded by `seqKV` keys takes
  // (pages of 64, a table row of seqKV / 64 pages each), "lean " first
  // when the entry takes it.
  auto gridAt = [&](int64_t batch, int64_t seqKV) -> std::string {
    a.batch = batch;
    a.seqKV = seqKV;
    a.maxPages = int(seqKV / 64);
    a.numPages = int(batch * seqKV / 64);
    if (!succeeds(kernel.prepare(a, NAN, &prepared)))
      return "refused";
    return (prepared.leanEntry ? "lean " : "") + prepared.grid.str();
  };
  // Ragged waves (batch 17 x 16K, 6 splits: 816 CTAs): the split grid
  // (with one length the entry would take it at one CTA per SM).
  EXPECT_EQ(gridAt(17, 16384), "(6,8,17)");
  // Four full waves (batch 64 x 8K: 512 tiles, one split each): the split
  // grid, whose CTAs the hardware balances.
  EXPECT_EQ(gridAt(64, 8192), "(1,8,64)");
  // Two waves (batch 32 x 16K: 256 tiles): the entry, 256 CTAs; 33
  // sequences: the split grid.
  EXPECT_EQ(gridAt(32, 16384), "lean (256,1,1)");
  EXPECT_EQ(gridAt(33, 16384).rfind("lean", 0), std::string::npos);
  // A split count asked for: the split grid.
  a.kvSplits = 6;
  EXPECT_EQ(gridAt(17, 16384), "(6,8,17)");
}

// kv_cp_async (.meta kv_cp_async = 1, ABI 6): the load warpgroup copies K/V
// through their pointers and element strides, parameters 22-29 (K's and
// V's strides may differ: here V is [B, H, S, D]); the metadata refuses it
// with persistent CTAs (those copy with TMA).
TEST_F(FakeDriverTest, CpAsyncDecodeTakesKVPointersAndStrides) {
  KernelInfo info = decodeInfo();
  info.kvCpAsync = 1;
  AttentionSpec spec = decodeSpec();
  std::string cubin = tinyCubin(info.kernelName);
  AttentionKernel kernel;
  ASSERT_TRUE(succeeds(AttentionKernel::load(ctx, cubin.data(), cubin.size(),
                                             info, spec, &kernel)));
  AttentionArgs a = sampleArgs(); // batch 2, 32 q / 8 kv heads, 1000 keys
  a.seqQ = 1;
  a.kvSplits = 1;
  a.vStrides = {8 * 1000 * 128, 128, 1000 * 128};
  AttentionLaunch prepared;
  ASSERT_TRUE(succeeds(kernel.prepare(a, NAN, &prepared)));
  void *p[AttentionLaunch::kNumParams];
  prepared.fillParams(p);
  EXPECT_EQ(*static_cast<uint64_t *>(p[22]), 0x20000000000u);
  EXPECT_EQ(*static_cast<uint64_t *>(p[23]), 0x30000000000u);
  int64_t k[3] = {1000 * 8 * 128, 8 * 128, 128};
  int64_t v[3] = {8 * 1000 * 128, 128, 1000 * 128};
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(*static_cast<int64_t *>(p[24 + i]), k[i]) << "K stride " << i;
    EXPECT_EQ(*static_cast<int64_t *>(p[27 + i]), v[i]) << "V stride " << i;
  }
  EXPECT_EQ(*static_cast<int32_t *>(p[30]), 0) << "numPages: not paged";
  KernelInfo bad = info;
  bad.persistent = 1;
  EXPECT_TRUE(failsWith(AttentionKernel::load(ctx, cubin.data(), cubin.size(),
                                              bad, spec, &kernel),
                        "kv_cp_async needs split_kv = 1, without persistent "
                        "unless lean"));
}

// Paged kv_cp_async (ABI 6, parameter 30): K/V's "batch" strides are the
// pages' and parameter 30 is the pool's page count.
TEST_F(FakeDriverTest, PagedCpAsyncDecodeTakesThePoolSize) {
  KernelInfo info = pagedDecodeInfo();
  info.kvCpAsync = 1;
  AttentionSpec spec = pagedDecodeSpec();
  std::string cubin = tinyCubin(info.kernelName);
  AttentionKernel kernel;
  ASSERT_TRUE(succeeds(AttentionKernel::load(ctx, cubin.data(), cubin.size(),
                                             info, spec, &kernel)));
  AttentionArgs a = pagedDecodeArgs();
  int64_t row = 8 * 128;
  AttentionLaunch prepared;
  ASSERT_TRUE(succeeds(kernel.prepare(a, NAN, &prepared)));
  void *p[AttentionLaunch::kNumParams];
  prepared.fillParams(p);
  EXPECT_EQ(*static_cast<uint64_t *>(p[22]), 0x20000000000u);
  EXPECT_EQ(*static_cast<uint64_t *>(p[23]), 0x30000000000u);
  EXPECT_EQ(*static_cast<int64_t *>(p[24]), 16 * row) << "K's page stride";
  EXPECT_EQ(*static_cast<int64_t *>(p[28]), row) << "V's row stride";
  EXPECT_EQ(*static_cast<uint64_t *>(p[16]), 0x70000000u);
  EXPECT_EQ(*static_cast<int32_t *>(p[17]), 63);
  EXPECT_EQ(*static_cast<int32_t *>(p[30]), 200) << "numPages";
}

// merge_kernel (.meta merge_kernel = 1): with several splits merged by the
// merge kernel (splitMerge, else the split model's pick) the launch is the
// attention kernel with parameter 21 = 1, then <kernel>_merge as its
// programmatic dependent on grid (query tiles x ceil(units / 32), kv heads,
// batch) with 256 threads and the split count in parameter 19; with one
// split, or merged in the kernel, no merge launch (parameter 21 = 0).
TEST_F(FakeDriverTest, MergeKernelFollowsTheSplits) {
  KernelInfo info = decodeInfo();
  info.mergeKernel = 1;
  AttentionSpec spec = decodeSpec(); // head_dim 128
  std::string cubin = tinyCubin(info.kernelName);
  AttentionKernel kernel;
  ASSERT_TRUE(succeeds(AttentionKernel::load(ctx, cubin.data(), cubin.size(),
                                             info, spec, &kernel)));
  void (*shape)(int, unsigned[3], unsigned *, int *) = nullptr;
  resolve("blasstFakeLaunchShape", &shape);
  AttentionArgs a = sampleArgs(); // batch 2, 32 q / 8 kv heads
  a.seqQ = 3;                     // 4 x 3 rows x 32 units: 12 merge CTAs
  a.seqKV = 5000;
  a.kvSplits = 5;
  a.workspace = 0x50000000;
  a.workspaceBytes = kernel.workspaceBytes(a);
  a.splitMerge = SplitMerge::MergeKernel;
  AttentionLaunch prepared;
  ASSERT_TRUE(succeeds(kernel.prepare(a, NAN, &prepared)));
  EXPECT_EQ(prepared.grid.str(), "(5,8,2)");
  EXPECT_EQ(prepared.mergeGrid.str(), "(12,8,2)");
  EXPECT_EQ(prepared.decodeSplits, 5);
  EXPECT_EQ(prepared.mergeLaunch, 1);
  int before = launches();
  ASSERT_TRUE(succeeds(kernel.launch(prepared, nullptr)));
  EXPECT_EQ(launches(), before + 2);
  unsigned grid[3], block;
  int dependent;
  shape(1, grid, &block, &dependent);
  EXPECT_EQ(grid[0], 5u);
  EXPECT_EQ(block, 256u);
  EXPECT_EQ(dependent, 0);
  shape(0, grid, &block, &dependent);
  EXPECT_EQ(grid[0], 12u);
  EXPECT_EQ(grid[1], 8u);
  EXPECT_EQ(grid[2], 2u);
  EXPECT_EQ(block, kMergeThreads);
  EXPECT_EQ(dependent, 1);
  // seq_q 8: 4 x 8 rows, 32 merge CTAs per tile.
  a.seqQ = 8;
  ASSERT_TRUE(succeeds(kernel.prepare(a, NAN, &prepared)));
  EXPECT_EQ(prepared.mergeGrid.str(), "(32,8,2)");
  // Merged in the kernel when asked: one launch, parameter 21 = 0.
  a.splitMerge = SplitMerge::InKernel;
  ASSERT_TRUE(succeeds(kernel.prepare(a, NAN, &prepared)));
  EXPECT_EQ(prepared.mergeGrid.x, 0u);
  EXPECT_EQ(prepared.mergeLaunch, 0);
  before = launches();
  ASSERT_TRUE(succeeds(kernel.launch(prepared, nullptr)));
  EXPECT_EQ(launches(), before + 1);
  // Auto: the split model's cheaper merge. 4 rows (seq_q 1): one round trip
  // of the last split beats a second launch; 32 rows (seq_q 8) take eight.
  a.splitMerge = SplitMerge::Auto;
  a.seqQ = 1;
  EXPECT_FALSE(kernel.decodeSplitsFor(a).mergeKernel);
  a.seqQ = 8;
  EXPECT_TRUE(kernel.decodeSplitsFor(a).mergeKernel);
  a.kvSplits = 0; // the model's count and merge together
  DecodeSplits pick = kernel.decodeSplitsFor(a);
  EXPECT_GT(pick.splits, 1);
  EXPECT_TRUE(pick.mergeKernel);
  a.kvSplits = 5;
  // One split: the attention kernel stores O itself.
  a.kvSplits = 1;
  ASSERT_TRUE(succeeds(kernel.prepare(a, NAN, &prepared)));
  EXPECT_EQ(prepared.mergeGrid.x, 0u);
  before = launches();
  ASSERT_TRUE(succeeds(kernel.launch(prepared, nullptr)));
  EXPECT_EQ(launches(), before + 1);
  // The metadata: merge_kernel needs split KV without persistent CTAs.
  KernelInfo bad = info;
  bad.persistent = 1;
  EXPECT_TRUE(failsWith(AttentionKernel::load(ctx, cubin.data(), cubin.size(),
                                              bad, spec, &kernel),
                        "merge_kernel needs split_kv = 1 and no persistent"));
}

// The merge kernel's cost is not the last split's: MQA (one KV head, 32 rows
// of a tile) at batch 1 x 128K takes more splits with it than without.
TEST(DecodeSplitsTest, AMergeKernelAllowsMoreSplits) {
  int64_t blockBytes = 64 * 256 * 2;
  int inKernel = chooseDecodeSplits(1, 2048, blockBytes, 132, false, 32 * 32);
  bool chosen = false;
  int second = chooseDecodeSplits(1, 2048, blockBytes, 132, false, 32 * 32,
                                  SplitMerge::MergeKernel, &chosen);
  EXPECT_EQ(inKernel, 64);
  EXPECT_GT(second, inKernel);
  EXPECT_LE(second, 132);
  EXPECT_TRUE(chosen);
  // Auto picks the merge kernel there, and the last split's merge for 4
  // rows (32/8 heads, seq_q 1) at batch 1 x 32K.
  EXPECT_EQ(chooseDecodeSplits(1, 2048, blockBytes, 132, false, 32 * 32,
                               SplitMerge::Auto, &chosen),
            second);
  EXPECT_TRUE(chosen);
  EXPECT_EQ(chooseDecodeSplits(8, 512, blockBytes, 132, false, 4 * 32,
                               SplitMerge::Auto, &chosen),
            chooseDecodeSplits(8, 512, blockBytes, 132, false, 4 * 32));
  EXPECT_FALSE(chosen);
}

// A kernel built without merge_kernel has no merge kernel to ask for.
TEST_F(FakeDriverTest, MergeKernelNeedsTheMergeKernel) {
  KernelInfo info = decodeInfo();
  AttentionSpec spec = decodeSpec();
  std::string cubin = tinyCubin(info.kernelName);
  AttentionKernel kernel;
  ASSERT_TRUE(succeeds(AttentionKernel::load(ctx, cubin.data(), cubin.size(),
                                             info, spec, &kernel)));
  AttentionArgs a = sampleArgs();
  a.seqQ = 3;
  a.seqKV = 5000;
  a.kvSplits = 5;
  a.workspace = 0x50000000;
  a.workspaceBytes = kernel.workspaceBytes(a);
  a.splitMerge = SplitMerge::MergeKernel;
  AttentionLaunch prepared;
  EXPECT_TRUE(failsWith(kernel.prepare(a, NAN, &prepared),
                        "built without merge_kernel"));
  a.splitMerge = SplitMerge::Auto; // merges in the kernel
  ASSERT_TRUE(succeeds(kernel.prepare(a, NAN, &prepared)));
  EXPECT_EQ(prepared.mergeGrid.x, 0u);
  EXPECT_EQ(prepared.mergeLaunch, 0);
}

// Whatever the shape: a count in [1, max(1, min(blocks / 2, 1024))], so no
// split is empty and the workspace stays bounded.
TEST(DecodeSplitsTest, TheCountStaysInItsRange) {
  uint64_t x = 12345;
  auto next = [&](int64_t hi) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    return int64_t((x >> 33) % uint64_t(hi)) + 1;
  };
  for (int i = 0; i < 2000; ++i) {
    int64_t tiles = next(4096), blocks = next(1 << 16);
    int64_t bytes = next(1 << 17);
    int sms = int(next(264));
    for (bool persistent : {false, true}) {
      int s = chooseDecodeSplits(tiles, blocks, bytes, sms, persistent);
      EXPECT_GE(s, 1);
      EXPECT_LE(s, std::max<int64_t>(1, std::min<int64_t>(blocks / 2, 1024)))
          << tiles << " tiles, " << blocks << " blocks, " << sms << " SMs";
    }
  }
}

// A persistent decode kernel's split count: each extra item costs its
// epilogue, so fewer splits than the one-CTA-per-split launch where the
// tiles fill the SMs (docs/results/2026-12-03-session21.md §7).
TEST(DecodeSplitsTest, PersistentCountsWeighTheItems) {
  constexpr int64_t kBlock = 64 * 256 * 2;
  EXPECT_EQ(chooseDecodeSplits(8, 512, kBlock, 132, true), 16);
  EXPECT_EQ(chooseDecodeSplits(128, 256, kBlock, 132, true), 1);
  EXPECT_EQ(chooseDecodeSplits(136, 256, kBlock, 132, true), 8);
  EXPECT_EQ(chooseDecodeSplits(512, 64, kBlock, 132, true), 1);
}

// Decode kernels (q_group, split_kv): the grid is (query tiles x splits, kv
// heads, batch), the split count follows AttentionArgs::kvSplits or the SM
// count, and a launch with several splits needs the workspace.
TEST_F(FakeDriverTest, DecodeGridSplitsAndWorkspace) {
  KernelInfo info = decodeInfo();
  AttentionSpec spec = decodeSpec();
  std::string cubin = tinyCubin(info.kernelName);
  AttentionKernel kernel;
  ASSERT_TRUE(succeeds(AttentionKernel::load(ctx, cubin.data(), cubin.size(),
                                             info, spec, &kernel)));
  AttentionArgs a = sampleArgs(); // batch 2, 32 q / 8 kv heads
  a.seqQ = 4;
  a.seqKV = 5000; // 40 blocks of 128 keys
  // 16 tiles (2 x 8 kv heads, 4 tokens fit one 16-token tile), 132 SMs: 8.
  EXPECT_EQ(kernel.kvSplitsFor(a), 8);
  size_t bytes = size_t(16 * 8) * 64 * 129 * 4 + 16 * 4;
  EXPECT_EQ(kernel.workspaceBytes(a), bytes);
  AttentionLaunch prepared;
  EXPECT_TRUE(failsWith(kernel.prepare(a, NAN, &prepared),
                        "the launch splits KV 8 ways and needs a workspace of " +
                            std::to_string(bytes) + " bytes"));
  a.workspace = 0x50000000;
  a.workspaceBytes = bytes - 4;
  EXPECT_TRUE(failsWith(kernel.prepare(a, NAN, &prepared),
                        "needs " + std::to_string(bytes)));
  a.workspaceBytes = bytes;
  ASSERT_TRUE(succeeds(kernel.prepare(a, NAN, &prepared)));
  EXPECT_EQ(prepared.grid.str(), "(8,8,2)");
  EXPECT_EQ(prepared.workspace, 0x50000000u);
  EXPECT_EQ(prepared.kvSplits, 8);
  // One split: no workspace passed, grid x = query tiles.
  a.kvSplits = 1;
  EXPECT_EQ(kernel.workspaceBytes(a), 0u);
  ASSERT_TRUE(succeeds(kernel.prepare(a, NAN, &prepared)));
  EXPECT_EQ(prepared.grid.str(), "(1,8,2)");
  EXPECT_EQ(prepared.workspace, 0u);
  // No more splits than KV blocks.
  a.kvSplits = 100;
  a.seqKV = 300;
  EXPECT_EQ(kernel.kvSplitsFor(a), 3);
  // Interleaved chunks of C blocks: no more splits than chunks (none empty).
  {
    KernelInfo chunked = info;
    chunked.splitChunk = 4;
    AttentionKernel k4;
    ASSERT_TRUE(succeeds(AttentionKernel::load(ctx, cubin.data(), cubin.size(),
                                               chunked, spec, &k4)));
    a.seqKV = 5000; // 40 blocks of 128 keys, 10 chunks
    EXPECT_EQ(k4.kvSplitsFor(a), 10);
    a.seqKV = 300;
  }
  a.kvSplits = 0;
  a.seqQ = 9;
  EXPECT_TRUE(failsWith(kernel.prepare(a, NAN, &prepared),
                        "seqQ is 9 but a decode kernel (phase = decode) takes "
                        "at most 8 new tokens per sequence"));
  // Metadata that does not match the spec's phase.
  KernelInfo prefill = info;
  prefill.qGroup = 0;
  prefill.splitKV = 0;
  EXPECT_TRUE(failsWith(AttentionKernel::load(ctx, cubin.data(), cubin.size(),
                                              prefill, spec, &kernel),
                        "does not match the spec (phase = decode"));
}

// Decode with a head ratio that does not divide the 64-row tile (24 q / 8
// kv heads: G = 3, 21 tokens per tile, rows 63..63 padding; 21 q / 1 kv
// head: G = 21, 3 tokens per tile): Q's box is {64, G, floor(64 / G)}, the
// tiles per (batch, kv head) are ceil(seq_q / floor(64 / G)), and they size
// the grid and the workspace; q_group > block_m is refused.
TEST_F(FakeDriverTest, DecodeGroupNotDividingTheTile) {
  auto box = [](const CUtensorMap &m, int i) {
    uint32_t b = 0;
    std::memcpy(&b, reinterpret_cast<const char *>(&m) + 64 + 4 * i, 4);
    return b;
  };
  KernelInfo info = sampleInfo();
  info.blockM = 64;
  info.threads = 256;
  info.qGroup = 3;
  info.splitKV = 1;
  AttentionSpec spec = sampleSpec();
  spec.phase = Phase::Decode;
  spec.numQHeads = 24;
  std::string cubin = tinyCubin(info.kernelName);
  AttentionKernel kernel;
  ASSERT_TRUE(succeeds(AttentionKernel::load(ctx, cubin.data(), cubin.size(),
                                             info, spec, &kernel)));
  AttentionArgs a = sampleArgs(); // batch 2
  a.numQHeads = 24;
  a.setContiguousStrides();
  a.seqQ = 8;
  a.seqKV = 5000; // 40 blocks of 128 keys
  // 16 tiles (2 x 8 kv heads, 8 tokens fit one 21-token tile): 8 splits.
  EXPECT_EQ(kernel.kvSplitsFor(a), 8);
  size_t bytes = size_t(16 * 8) * 64 * 129 * 4 + 16 * 4;
  EXPECT_EQ(kernel.workspaceBytes(a), bytes);
  a.workspace = 0x50000000;
  a.workspaceBytes = bytes;
  AttentionLaunch prepared;
  ASSERT_TRUE(succeeds(kernel.prepare(a, NAN, &prepared)));
  EXPECT_EQ(prepared.grid.str(), "(8,8,2)");
  EXPECT_EQ(box(prepared.tmQ, 0), 64u);
  EXPECT_EQ(box(prepared.tmQ, 1), 3u) << "the q_group q heads";
  EXPECT_EQ(box(prepared.tmQ, 2), 21u) << "floor(64 / 3) tokens";
  EXPECT_EQ(box(prepared.tmQ, 3), 1u);

  // G = 21: 3 tokens per tile, seq_q 4 takes 2 tiles per (batch, kv head).
  info.qGroup = 21;
  spec.numQHeads = 21;
  spec.numKVHeads = 1;
  ASSERT_TRUE(succeeds(AttentionKernel::load(ctx, cubin.data(), cubin.size(),
                                             info, spec, &kernel)));
  a.numQHeads = 21;
  a.numKVHeads = 1;
  a.setContiguousStrides();
  a.seqQ = 4;
  a.kvSplits = 5;
  bytes = size_t(4 * 5) * 64 * 129 * 4 + 4 * 4; // 2 batches x 2 tiles
  EXPECT_EQ(kernel.workspaceBytes(a), bytes);
  a.workspaceBytes = bytes;
  ASSERT_TRUE(succeeds(kernel.prepare(a, NAN, &prepared)));
  EXPECT_EQ(prepared.grid.str(), "(10,1,2)");
  EXPECT_EQ(box(prepared.tmQ, 1), 21u);
  EXPECT_EQ(box(prepared.tmQ, 2), 3u) << "floor(64 / 21) tokens";

  // More q heads per kv head than the tile has rows: no token fits.
  info.qGroup = 65;
  spec.numQHeads = 65;
  EXPECT_TRUE(failsWith(AttentionKernel::load(ctx, cubin.data(), cubin.size(),
                                              info, spec, &kernel),
                        "q_group = 65"));
}

/// One cuTensorMapEncodeTiled call as the fake driver recorded it.
struct RecordedEncode {
  unsigned rank = 0;
  uint64_t address = 0;
  uint64_t dims[5] = {}, strides[4] = {};
  unsigned box[5] = {};
  int swizzle = -1, oobFill = -1, dataType = -1;
};

// sm_100a kernels (ABI 4): Q and O boxes of one 128-row tile (block_m 256 /
// q_tiles 2), O's tensor map encoded from the O pointer and strides (4-D
// {D, H, S, B}, box {64, 1, 128, 1}, swizzle 128B) and passed as parameter
// 18; sm_90a kernels encode no O map. The fake GPU is made an sm_100 one
// for this test; on the default sm_90 one the kernel is refused.
TEST_F(FakeDriverTest, Sm100aEncodesAndPassesOTensorMap) {
  int (*encodes)() = nullptr;
  bool (*encode)(int, unsigned *, uint64_t *, uint64_t *, uint64_t *,
                 unsigned *, int *, int *, int *) = nullptr;
  uint64_t (*launchedMap)(int) = nullptr;
  void (*setCC)(int, int) = nullptr;
  resolve("blasstFakeEncodes", &encodes);
  resolve("blasstFakeEncode", &encode);
  resolve("blasstFakeLaunchedMap", &launchedMap);
  resolve("blasstFakeSetComputeCapability", &setCC);
  auto recorded = [&](int i) {
    RecordedEncode e;
    EXPECT_TRUE(encode(i, &e.rank, &e.address, e.dims, e.strides, e.box,
                       &e.swizzle, &e.oobFill, &e.dataType));
    return e;
  };

  KernelInfo info = sampleInfo();
  info.target = "sm_100a";
  info.blockM = 256;
  info.threads = 512;
  info.qTiles = 2;
  info.oTensorMap = 1;
  std::string cubin = tinyCubin(info.kernelName);
  Context b200; // outlives the kernel loaded into it
  AttentionKernel kernel;
  EXPECT_TRUE(failsWith(AttentionKernel::load(ctx, cubin.data(), cubin.size(),
                                              info, sampleSpec(), &kernel),
                        "it was compiled for sm_100a, whose arch-specific "
                        "code runs only on GPUs of compute capability 10.0, "
                        "but GPU 0 (Fake sm_90 GPU) is sm_90"));

  setCC(10, 0);
  ASSERT_TRUE(succeeds(Context::create(0, &b200)));
  setCC(9, 0);
  ASSERT_TRUE(succeeds(AttentionKernel::load(
      b200, cubin.data(), cubin.size(), info, sampleSpec(), &kernel)));
  AttentionArgs args = sampleArgs(); // batch 2, seqQ 1000, 32 q heads
  // O as [B, H, S, D] (strides are free), unlike Q.
  args.oStrides = {32 * 1000 * 128, 128, 1000 * 128};
  int before = encodes();
  AttentionLaunch prepared;
  ASSERT_TRUE(succeeds(kernel.prepare(args, NAN, &prepared)));
  ASSERT_EQ(encodes(), before + 4) << "Q, K, V and O";
  RecordedEncode q = recorded(before + 1), o = recorded(before + 4);
  EXPECT_EQ(q.box[2], 128u) << "Q: one 128-row tile per box";
  EXPECT_EQ(o.rank, 4u);
  EXPECT_EQ(o.address, args.o);
  EXPECT_EQ(o.dims[0], 128u);  // head_dim_v
  EXPECT_EQ(o.dims[1], 32u);   // q heads
  EXPECT_EQ(o.dims[2], 1000u); // seqQ: rows past it are not written
  EXPECT_EQ(o.dims[3], 2u);    // batch
  EXPECT_EQ(o.strides[0], 1000u * 128 * 2); // head, bytes
  EXPECT_EQ(o.strides[1], 128u * 2);        // seq
  EXPECT_EQ(o.strides[2], 32u * 1000 * 128 * 2);
  EXPECT_EQ(o.box[0], 64u);
  EXPECT_EQ(o.box[1], 1u);
  EXPECT_EQ(o.box[2], 128u);
  EXPECT_EQ(o.box[3], 1u);
  EXPECT_EQ(o.swizzle, int(CU_TENSOR_MAP_SWIZZLE_128B));
  EXPECT_EQ(o.oobFill, int(CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
  EXPECT_EQ(o.dataType, int(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16));
  EXPECT_EQ(prepared.grid.str(), "(4,32,2)") << "ceil(1000 / 256) CTAs";
  ASSERT_TRUE(succeeds(kernel.launch(prepared, nullptr)));
  EXPECT_EQ(launchedMap(0), uint64_t(before + 1)) << "Q";
  EXPECT_EQ(launchedMap(18), uint64_t(before + 4)) << "O as parameter 18";

  // An sm_90a kernel: Q's box is block_m rows, and there is no O map.
  AttentionKernel hopper;
  ASSERT_TRUE(succeeds(loadSparse(&hopper)));
  before = encodes();
  ASSERT_TRUE(succeeds(hopper.prepare(sampleArgs(), NAN, &prepared)));
  EXPECT_EQ(encodes(), before + 3);
  EXPECT_EQ(recorded(before + 1).box[2], 128u);
}

// Decode KV caches (ABI 4): per-sequence lengths and a paged cache. The
// arguments are checked against the spec, K/V's tensor maps describe the
// page pool ({D, H, page, numPages}, boxes of min(block_n, page) rows) and
// parameters 15-17 carry the lengths, the table and its columns.
TEST_F(FakeDriverTest, DecodeKVCacheArgsAndTensorMaps) {
  void (*lastKVCache)(uint64_t *) = nullptr;
  resolve("blasstFakeLastKVCache", &lastKVCache);
  KernelInfo info = pagedDecodeInfo();
  AttentionSpec spec = pagedDecodeSpec();
  std::string cubin = tinyCubin(info.kernelName);
  AttentionKernel kernel;
  ASSERT_TRUE(succeeds(AttentionKernel::load(ctx, cubin.data(), cubin.size(),
                                             info, spec, &kernel)));
  AttentionArgs a = sampleArgs(); // batch 2, 32 q / 8 kv heads, hd 128
  a.seqQ = 1;
  a.seqKV = 1000; // the lengths' bound
  a.kvSplits = 1;
  AttentionLaunch prepared;
  EXPECT_TRUE(failsWith(kernel.prepare(a, NAN, &prepared),
                        "kv_lengths = per_sequence but no seqLensKV pointer"));
  a.seqLensKV = 0x60000000;
  EXPECT_TRUE(failsWith(kernel.prepare(a, NAN, &prepared),
                        "kv_cache = paged:page=16 but no blockTable"));
  a.blockTable = 0x70000000;
  a.maxPages = 62; // 992 tokens < seqKV
  a.numPages = 200;
  EXPECT_TRUE(failsWith(kernel.prepare(a, NAN, &prepared),
                        "seqKV is 1000 but the block table holds at most "
                        "maxPages x page = 62 x 16 = 992 tokens"));
  a.maxPages = 63;
  a.numPages = 0;
  EXPECT_TRUE(failsWith(kernel.prepare(a, NAN, &prepared),
                        "numPages is 0"));
  a.numPages = 200;
  // The pool: [200 pages, 16 tokens, 8 heads, 128].
  int64_t row = 8 * 128;
  a.kStrides = a.vStrides = {16 * row, row, 128};
  ASSERT_TRUE(succeeds(kernel.prepare(a, NAN, &prepared)));
  auto dims = [](const CUtensorMap &m, int i) {
    uint64_t d = 0;
    std::memcpy(&d, reinterpret_cast<const char *>(&m) + 8 * i, 8);
    return d;
  };
  auto box = [](const CUtensorMap &m, int i) {
    uint32_t b = 0;
    std::memcpy(&b, reinterpret_cast<const char *>(&m) + 64 + 4 * i, 4);
    return b;
  };
  for (const CUtensorMap *m : {&prepared.tmK, &prepared.tmV}) {
    EXPECT_EQ(dims(*m, 0), 128u);
    EXPECT_EQ(dims(*m, 1), 8u);
    EXPECT_EQ(dims(*m, 2), 16u) << "a page's tokens";
    EXPECT_EQ(dims(*m, 3), 200u) << "the pages";
    EXPECT_EQ(box(*m, 2), 16u) << "min(block_n 64, page 16) rows";
  }
  ASSERT_TRUE(succeeds(kernel.launch(prepared, nullptr)));
  uint64_t kv[3] = {};
  lastKVCache(kv);
  EXPECT_EQ(kv[0], 0x60000000u);
  EXPECT_EQ(kv[1], 0x70000000u);
  EXPECT_EQ(kv[2], 63u);
  // A contiguous kernel refuses a table, a uniform one the lengths.
  AttentionSpec contiguous = spec;
  contiguous.kvPageSize = 0;
  contiguous.kvPerSequence = false;
  EXPECT_TRUE(failsWith(validateKVCacheArgs(a, contiguous),
                        "a seqLensKV pointer was given but the kernel was "
                        "compiled with kv_lengths = uniform"));
  a.seqLensKV = 0;
  EXPECT_TRUE(failsWith(validateKVCacheArgs(a, contiguous),
                        "a block table (blockTable, maxPages, numPages) was "
                        "given but the kernel was compiled for a contiguous "
                        "kv_cache"));
  // Metadata that does not match the spec.
  KernelInfo uniform = info;
  uniform.perSeqKV = 0;
  EXPECT_TRUE(failsWith(AttentionKernel::load(ctx, cubin.data(), cubin.size(),
                                              uniform, spec, &kernel),
                        "the metadata (per_seq_kv = 0, page_size = 16) does "
                        "not match the spec (kv_lengths = per_sequence"));
  KernelInfo badPage = info;
  badPage.pageSize = 24;
  EXPECT_TRUE(failsWith(validateKernelInfo(badPage),
                        "page_size = 24 is not a power of two"));
  // Contiguous with per-sequence lengths: K/V over [batch, seqKV].
  KernelInfo perSeq = info;
  perSeq.pageSize = 0;
  AttentionSpec perSeqSpec = spec;
  perSeqSpec.kvPageSize = 0;
  ASSERT_TRUE(succeeds(AttentionKernel::load(ctx, cubin.data(), cubin.size(),
                                             perSeq, perSeqSpec, &kernel)));
  AttentionArgs c = sampleArgs();
  c.seqQ = 2;
  c.kvSplits = 1;
  c.seqLensKV = 0x60000000;
  ASSERT_TRUE(succeeds(kernel.prepare(c, NAN, &prepared)));
  EXPECT_EQ(dims(prepared.tmK, 2), 1000u);
  EXPECT_EQ(dims(prepared.tmK, 3), 2u);
  EXPECT_EQ(box(prepared.tmK, 2), 64u);
  EXPECT_EQ(prepared.seqLensKV, 0x60000000u);
  EXPECT_EQ(prepared.blockTable, 0u);
}

// BLASST decode with the KV caches: the same KV cache checks and
// parameters 15-17 as dense decode, plus the statistics (required, zeroed
// on request over [batch, q heads, 2]) and the threshold: parameter 12 is
// the a= policy's log2 a, which the kernel turns into each sequence's own
// T with the length it reads.
TEST_F(FakeDriverTest, DecodeBLASSTWithKVCaches) {
  void (*lastKVCache)(uint64_t *) = nullptr;
  int (*memsets)() = nullptr;
  void (*lastMemset)(uint64_t *, unsigned *, size_t *) = nullptr;
  resolve("blasstFakeLastKVCache", &lastKVCache);
  resolve("blasstFakeMemsets", &memsets);
  resolve("blasstFakeLastMemset", &lastMemset);
  KernelInfo info = pagedDecodeInfo();
  AttentionSpec spec = pagedDecodeSpec();
  spec.sparsity = {SparsityKind::ScaleFactor, 64};
  spec.stats = true;
  std::string cubin = tinyCubin(info.kernelName);
  AttentionKernel kernel;
  ASSERT_TRUE(succeeds(AttentionKernel::load(ctx, cubin.data(), cubin.size(),
                                             info, spec, &kernel)));
  AttentionArgs a = pagedDecodeArgs();
  a.seqQ = 4;
  AttentionLaunch prepared;
  EXPECT_TRUE(failsWith(kernel.prepare(a, NAN, &prepared),
                        "the kernel was compiled with stats = true but no "
                        "stats"));
  a.stats = 0x7000000;
  a.zeroStats = true;
  a.blockTable = 0;
  EXPECT_TRUE(failsWith(kernel.prepare(a, NAN, &prepared),
                        "kv_cache = paged:page=16 but no blockTable"));
  a.blockTable = 0x70000000;
  int before = memsets(), launched = launches();
  ASSERT_TRUE(succeeds(kernel.run(a, nullptr)));
  EXPECT_EQ(launches(), launched + 1);
  EXPECT_EQ(memsets(), before + 1);
  uint64_t ptr = 0;
  unsigned value = 1;
  size_t words = 0;
  lastMemset(&ptr, &value, &words);
  EXPECT_EQ(ptr, a.stats);
  EXPECT_EQ(words, size_t(a.batch * a.numQHeads * 4));
  EXPECT_EQ(lastThreshold(), kernel.specLog2Threshold());
  EXPECT_FLOAT_EQ(lastThreshold(), 6.0f) << "log2 a: not divided by seqKV";
  uint64_t kv[3] = {};
  lastKVCache(kv);
  EXPECT_EQ(kv[0], 0x60000000u);
  EXPECT_EQ(kv[1], 0x70000000u);
  EXPECT_EQ(kv[2], 63u);
}

// Every runtime call that needs its object's context gives the calling
// thread its previous current context back (another context, or none).
TEST_F(FakeDriverTest, CallsRestoreTheCallersContext) {
  int other = 0;
  for (CUcontext callers :
       {reinterpret_cast<CUcontext>(&other), static_cast<CUcontext>(nullptr)}) {
    SCOPED_TRACE(callers ? "another context current" : "no context current");
    ASSERT_EQ(setCurrent(callers), CUDA_SUCCESS);
    auto same = [&](const char *what) {
      EXPECT_EQ(currentContext(), callers) << "after " << what;
    };
    AttentionKernel kernel;
    ASSERT_TRUE(succeeds(loadSparse(&kernel)));
    same("AttentionKernel::load");
    ASSERT_TRUE(succeeds(kernel.run(sampleArgs(), nullptr)));
    EXPECT_EQ(contextAtLaunch(), ctx.get()) << "launched in its context";
    same("AttentionKernel::run");
    DeviceBuffer buffer;
    ASSERT_TRUE(succeeds(DeviceBuffer::allocate(ctx, 64, "B", &buffer)));
    same("DeviceBuffer::allocate");
    ASSERT_TRUE(succeeds(buffer.fill(0)));
    same("DeviceBuffer::fill");
    char host[64] = {};
    ASSERT_TRUE(succeeds(buffer.copyFromHost(host, sizeof(host))));
    same("DeviceBuffer::copyFromHost");
    ASSERT_TRUE(succeeds(buffer.copyToHost(host, sizeof(host))));
    same("DeviceBuffer::copyToHost");
    EventTimer timer;
    ASSERT_TRUE(succeeds(EventTimer::create(ctx, &timer)));
    ASSERT_TRUE(succeeds(timer.start(nullptr)));
    ASSERT_TRUE(succeeds(timer.stop(nullptr)));
    same("EventTimer");
    ASSERT_TRUE(succeeds(ctx.synchronize()));
    same("Context::synchronize");
    buffer = DeviceBuffer();
    timer = EventTimer();
    kernel = AttentionKernel();
    same("freeing and unloading");
    // makeCurrent is the one call whose job is to change it.
    ASSERT_TRUE(succeeds(ctx.makeCurrent()));
    EXPECT_EQ(currentContext(), ctx.get());
  }
}

//===----------------------------------------------------------------------===//
// Launch tests on a GPU (sm_90)
//===----------------------------------------------------------------------===//

// A kernel with the ABI-2 parameter list. Thread 0 of every block counts the
// block at o[72]; thread 0 of block (0,0,0) writes what it received:
//   o[0] seqQ  o[4] seqKV  o[8] oStrideB  o[16] oStrideS  o[24] oStrideH
//   o[32] scaleLog2  o[36] log2Threshold  o[40] lse  o[48] stats
//   o[56] ntid.x  o[60..68] nctaid.xyz  o[80,88,96] first qword of tmQ/K/V
//   o[104] log2ThresholdPtr
const char *kProbePtx = R"(
.version 8.0
.target sm_90a
.address_size 64

.visible .entry abi_probe(
  .param .align 64 .b8 tmQ[128],
  .param .align 64 .b8 tmK[128],
  .param .align 64 .b8 tmV[128],
  .param .u64 o,
  .param .u64 lse,
  .param .u64 stats,
  .param .u32 seqQ,
  .param .u32 seqKV,
  .param .u64 oStrideB,
  .param .u64 oStrideS,
  .param .u64 oStrideH,
  .param .f32 scaleLog2,
  .param .f32 log2Threshold,
  .param .u64 log2ThresholdPtr
) .maxntid 128, 1, 1
{
  .reg .b32 %r<16>;
  .reg .b64 %rd<16>;
  .reg .f32 %f<4>;
  .reg .pred %p<4>;

  ld.param.u64 %rd1, [o];
  cvta.to.global.u64 %rd2, %rd1;
  mov.u32 %r1, %tid.x;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra DONE;
  atom.global.add.u32 %r2, [%rd2+72], 1;
  mov.u32 %r3, %ctaid.x;
  mov.u32 %r4, %ctaid.y;
  mov.u32 %r5, %ctaid.z;
  or.b32 %r6, %r3, %r4;
  or.b32 %r6, %r6, %r5;
  setp.ne.u32 %p2, %r6, 0;
  @%p2 bra DONE;
  ld.param.u32 %r7, [seqQ];
  st.global.u32 [%rd2+0], %r7;
  ld.param.u32 %r8, [seqKV];
  st.global.u32 [%rd2+4], %r8;
  ld.param.u64 %rd3, [oStrideB];
  st.global.u64 [%rd2+8], %rd3;
  ld.param.u64 %rd4, [oStrideS];
  st.global.u64 [%rd2+16], %rd4;
  ld.param.u64 %rd5, [oStrideH];
  st.global.u64 [%rd2+24], %rd5;
  ld.param.f32 %f1, [scaleLog2];
  st.global.f32 [%rd2+32], %f1;
  ld.param.f32 %f2, [log2Threshold];
  st.global.f32 [%rd2+36], %f2;
  ld.param.u64 %rd6, [lse];
  st.global.u64 [%rd2+40], %rd6;
  ld.param.u64 %rd7, [stats];
  st.global.u64 [%rd2+48], %rd7;
  mov.u32 %r9, %ntid.x;
  st.global.u32 [%rd2+56], %r9;
  mov.u32 %r10, %nctaid.x;
  st.global.u32 [%rd2+60], %r10;
  mov.u32 %r11, %nctaid.y;
  st.global.u32 [%rd2+64], %r11;
  mov.u32 %r12, %nctaid.z;
  st.global.u32 [%rd2+68], %r12;
  ld.param.u64 %rd8, [tmQ];
  st.global.u64 [%rd2+80], %rd8;
  ld.param.u64 %rd9, [tmK];
  st.global.u64 [%rd2+88], %rd9;
  ld.param.u64 %rd10, [tmV];
  st.global.u64 [%rd2+96], %rd10;
  ld.param.u64 %rd11, [log2ThresholdPtr];
  st.global.u64 [%rd2+104], %rd11;
DONE:
  ret;
}
)";

/// kProbePtx assembled by ptxas for sm_90a (AttentionKernel::load takes
/// cubins only), or "" with the reason in `why` when there is no ptxas.
std::string probeCubin(std::string *why) {
  std::string ptxas;
  for (const char *env : {"CUDA_HOME", "CUDA_PATH"})
    if (const char *v = std::getenv(env); v && ptxas.empty())
      if (::access((std::string(v) + "/bin/ptxas").c_str(), X_OK) == 0)
        ptxas = std::string(v) + "/bin/ptxas";
  if (ptxas.empty() && ::access("/usr/local/cuda/bin/ptxas", X_OK) == 0)
    ptxas = "/usr/local/cuda/bin/ptxas";
  if (ptxas.empty()) {
    *why = "no ptxas ($CUDA_HOME/bin, /usr/local/cuda/bin) to assemble the "
           "probe";
    return "";
  }
  TempDir dir;
  writeFile(dir.file("probe.ptx"), kProbePtx);
  std::string cmd = "'" + ptxas + "' -arch=sm_90a '" + dir.file("probe.ptx") +
                    "' -o '" + dir.file("probe.cubin") + "'";
  if (std::system(cmd.c_str()) != 0) {
    *why = "ptxas failed on the probe: " + cmd;
    return "";
  }
  std::ifstream in(dir.file("probe.cubin"), std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class AttentionKernelGpuTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string why;
    if (!deviceAvailable(&why))
      GTEST_SKIP() << "no GPU: " << why;
    ASSERT_TRUE(succeeds(Context::create(0, &ctx)));
    if (ctx.info().computeCapabilityMajor != 9 ||
        ctx.info().computeCapabilityMinor != 0)
      GTEST_SKIP() << "needs an sm_90 GPU for sm_90a code; have "
                   << ctx.info().describe();
    cubin = probeCubin(&why);
    if (cubin.empty())
      GTEST_SKIP() << why;
  }

  static KernelInfo probeInfo() {
    KernelInfo info;
    info.kernelName = "abi_probe";
    info.target = "sm_90a";
    info.blockM = 64;
    info.blockN = 128;
    info.threads = 128;
    info.smemBytes = 100 * 1024; // above the 48 KiB default: must be raised
    return info;
  }

  static AttentionSpec probeSpec() {
    AttentionSpec spec;
    spec.headDim = spec.headDimV = 64;
    spec.numQHeads = 4;
    spec.numKVHeads = 2;
    spec.lse = true;
    spec.sparsity = {SparsityKind::LnLambda, -3.0};
    return spec;
  }

  Status loadProbe(const KernelInfo &info, const AttentionSpec &spec,
                   AttentionKernel *out) {
    return AttentionKernel::load(ctx, cubin.data(), cubin.size(), info, spec,
                                 out);
  }

  Context ctx;
  std::string cubin;
};

TEST_F(AttentionKernelGpuTest, PacksTheAbiParameters) {
  AttentionKernel kernel;
  ASSERT_TRUE(succeeds(loadProbe(probeInfo(), probeSpec(), &kernel)));
  int maxDynamic = 0;
  ASSERT_TRUE(succeeds(kernel.getFunction().getAttribute(
      CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, &maxDynamic)));
  EXPECT_EQ(maxDynamic, 100 * 1024);

  AttentionArgs a;
  a.batch = 2;
  a.seqQ = 130; // 3 blocks of 64 rows, the last partial
  a.seqKV = 77;
  a.numQHeads = 4;
  a.numKVHeads = 2;
  a.headDim = 64;
  a.setContiguousStrides();
  a.oStrides.seq = 4 * 64 + 16; // padded rows
  a.oStrides.batch = a.oStrides.seq * a.seqQ + 64;
  DeviceBuffer q, k, v, o, lse;
  ASSERT_TRUE(
      succeeds(DeviceBuffer::allocate(ctx, 2 * 130 * 4 * 64 * 2, "Q", &q)));
  ASSERT_TRUE(
      succeeds(DeviceBuffer::allocate(ctx, 2 * 77 * 2 * 64 * 2, "K", &k)));
  ASSERT_TRUE(
      succeeds(DeviceBuffer::allocate(ctx, 2 * 77 * 2 * 64 * 2, "V", &v)));
  ASSERT_TRUE(succeeds(
      DeviceBuffer::allocate(ctx, size_t(a.oStrides.batch) * 2 * 2, "O", &o)));
  ASSERT_TRUE(
      succeeds(DeviceBuffer::allocate(ctx, 2 * 4 * 130 * 4, "LSE", &lse)));
  ASSERT_TRUE(succeeds(o.fill(0)));
  a.q = q.address();
  a.k = k.address();
  a.v = v.address();
  a.o = o.address();
  a.lse = lse.address();

  AttentionLaunch prepared;
  ASSERT_TRUE(succeeds(kernel.prepare(a, 1.5f, &prepared)));
  EXPECT_EQ(prepared.grid.str(), "(3,4,2)");
  EXPECT_EQ(prepared.block.str(), "(128,1,1)");
  EXPECT_EQ(prepared.smemBytes, 100u * 1024);
  ASSERT_TRUE(succeeds(kernel.launch(prepared, nullptr)));
  ASSERT_TRUE(succeeds(synchronize(nullptr)));

  std::vector<unsigned char> out(112);
  ASSERT_TRUE(succeeds(o.copyToHost(out.data(), out.size())));
  auto u32 = [&](size_t off) {
    uint32_t x;
    std::memcpy(&x, &out[off], 4);
    return x;
  };
  auto u64 = [&](size_t off) {
    uint64_t x;
    std::memcpy(&x, &out[off], 8);
    return x;
  };
  auto f32 = [&](size_t off) {
    float x;
    std::memcpy(&x, &out[off], 4);
    return x;
  };
  EXPECT_EQ(u32(0), 130u);
  EXPECT_EQ(u32(4), 77u);
  EXPECT_EQ(u64(8), uint64_t(a.oStrides.batch));
  EXPECT_EQ(u64(16), uint64_t(a.oStrides.seq));
  EXPECT_EQ(u64(24), uint64_t(a.oStrides.head));
  EXPECT_FLOAT_EQ(f32(32), float(0.125 / std::log(2.0))); // 1/sqrt(64)*log2e
  EXPECT_EQ(f32(36), 1.5f);
  EXPECT_EQ(u64(40), lse.address());
  EXPECT_EQ(u64(48), 0u);
  EXPECT_EQ(u32(56), 128u);
  EXPECT_EQ(u32(60), 3u);
  EXPECT_EQ(u32(64), 4u);
  EXPECT_EQ(u32(68), 2u);
  EXPECT_EQ(u32(72), 24u); // every block ran once
  // The descriptors arrived by value.
  uint64_t firstQ, firstK, firstV;
  std::memcpy(&firstQ, &prepared.tmQ, 8);
  std::memcpy(&firstK, &prepared.tmK, 8);
  std::memcpy(&firstV, &prepared.tmV, 8);
  EXPECT_EQ(u64(80), firstQ);
  EXPECT_EQ(u64(88), firstK);
  EXPECT_EQ(u64(96), firstV);
  EXPECT_EQ(u64(104), 0u); // no threshold pointer

  // run() without a threshold: the spec's, ln_lambda -3 -> -3 * log2(e).
  ASSERT_TRUE(succeeds(o.fill(0)));
  ASSERT_TRUE(succeeds(kernel.run(a, nullptr)));
  ASSERT_TRUE(succeeds(synchronize(nullptr)));
  ASSERT_TRUE(succeeds(o.copyToHost(out.data(), out.size())));
  EXPECT_FLOAT_EQ(f32(36), float(-3.0 / std::log(2.0)));

  // A threshold in device memory arrives as parameter 13.
  ASSERT_TRUE(succeeds(o.fill(0)));
  AttentionArgs withPtr = a;
  withPtr.log2ThresholdPtr = lse.address() + 4;
  ASSERT_TRUE(succeeds(kernel.run(withPtr, nullptr)));
  ASSERT_TRUE(succeeds(synchronize(nullptr)));
  ASSERT_TRUE(succeeds(o.copyToHost(out.data(), out.size())));
  EXPECT_EQ(u64(104), lse.address() + 4);
  withPtr.log2ThresholdPtr = lse.address() + 2;
  EXPECT_TRUE(failsWith(kernel.run(withPtr, nullptr), "not 4-byte aligned"));

  // Bad arguments are refused before anything is launched.
  ASSERT_TRUE(succeeds(o.fill(0)));
  AttentionArgs bad = a;
  bad.lse = 0;
  EXPECT_TRUE(failsWith(kernel.run(bad, nullptr), "no LSE pointer"));
  ASSERT_TRUE(succeeds(synchronize(nullptr)));
  ASSERT_TRUE(succeeds(o.copyToHost(out.data(), out.size())));
  EXPECT_EQ(u32(72), 0u);
}

TEST_F(AttentionKernelGpuTest, LoadFilesReadsStemFiles) {
  TempDir dir;
  std::string stem = dir.file("probe");
  ASSERT_TRUE(succeeds(writeKernelInfo(stem + ".meta", probeInfo())));
  writeFile(stem + ".spec", probeSpec().toString());
  writeFile(stem + ".cubin", cubin);
  AttentionKernel kernel;
  ASSERT_TRUE(succeeds(AttentionKernel::loadFiles(ctx, stem, &kernel)));
  EXPECT_EQ(kernel.info().kernelName, "abi_probe");
  EXPECT_EQ(kernel.spec(), probeSpec());
  EXPECT_NE(kernel.describe().find("probe.cubin"), std::string::npos);
}

TEST_F(AttentionKernelGpuTest, LoadChecksTargetThreadsAndSharedMemory) {
  AttentionKernel kernel;
  KernelInfo info = probeInfo();
  info.target = "sm_100a";
  EXPECT_TRUE(failsWith(loadProbe(info, probeSpec(), &kernel),
                        "compiled for sm_100a, whose arch-specific code runs "
                        "only on GPUs of compute capability 10.0"));
  info = probeInfo();
  info.threads = 256; // the probe has .maxntid 128
  EXPECT_TRUE(failsWith(loadProbe(info, probeSpec(), &kernel),
                        "threads = 256 but the kernel allows at most 128"));
  info = probeInfo();
  info.smemBytes = 300000;
  EXPECT_TRUE(
      failsWith(loadProbe(info, probeSpec(), &kernel), "smem_bytes = 300000"));
  info = probeInfo();
  info.kernelName = "attn_missing";
  EXPECT_TRUE(
      failsWith(loadProbe(info, probeSpec(), &kernel), "'attn_missing'"));
}

} // namespace
