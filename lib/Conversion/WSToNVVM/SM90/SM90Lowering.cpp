//===- SM90Lowering.cpp - sm_90a: roles, running state, epilogue ----------===//
//
// Which roles and steps sm_90a lowers where, the initial running state,
// and the epilogue (O normalised and stored from the fragment, LSE).
//
//===----------------------------------------------------------------------===//
#include "SM90Lowering.h"

#include <cmath>

using namespace mlir;
using namespace blasst;
using namespace blasst::ws;
using namespace blasst::ws::lowering;

TargetLowering::~TargetLowering() = default;

std::unique_ptr<TargetLowering>
blasst::ws::lowering::createSM90Lowering(KernelEnv &env) {
  return std::make_unique<SM90Lowering>(env);
}

LogicalResult SM90Lowering::checkRole(RoleOp role) {
  if (role.getKind() == RoleKind::load || role.getKind() == RoleKind::compute)
    return success();
  return role.emitOpError()
         << "role kind '" << stringifyRoleKind(role.getKind())
         << "' is not lowered on sm_90a (load and compute roles are)";
}

LogicalResult SM90Lowering::checkPlacement(Operation *op, RoleState &st) {
  // On sm_90a the warpgroups that hold S, P and O (compute roles) run the
  // math; one elected thread of a load role issues the copies.
  bool compute = st.role.getKind() == RoleKind::compute;
  if (!compute && isa<MmaOp, RowMaxOp, SoftmaxUpdateOp, Exp2StoreOp, Exp2Op,
                      PackPOp, CorrectOp, EpilogueOp, VoteOp, UnlessSkippedOp,
                      MmaWaitOp, LoadFragOp>(op))
    return op->emitOpError()
           << "runs in a '" << stringifyRoleKind(st.role.getKind())
           << "' role; on sm_90a it is lowered in compute roles only";
  // One compute role runs the softmax, the correction and the epilogue:
  // nothing to hand over through shared memory.
  bool handOver = false;
  if (auto u = dyn_cast<SoftmaxUpdateOp>(op))
    handOver = u.getFactorsAttr() != nullptr;
  else if (auto c = dyn_cast<CorrectOp>(op))
    handOver = c.getFactorsAttr() != nullptr;
  else if (auto e = dyn_cast<EpilogueOp>(op))
    handOver = e.getSumsAttr() != nullptr;
  if (handOver)
    return op->emitOpError()
           << "hands the softmax state to another role through shared "
              "memory; on sm_90a the compute role keeps it in registers";
  if (compute && isa<TmaLoadOp, AwaitVoteOp>(op))
    return op->emitOpError()
           << "runs in a compute role; on sm_90a TMA loads are issued by a "
              "load role";
  return success();
}

void SM90Lowering::initRunningState(RoleState &st) {
  st.o = LLVM::ZeroOp::create(b, loc, accType(spec.headDimV));
  for (int i = 0; i < 2; ++i) {
    st.m[i] = cf(-INFINITY);
    st.l[i] = cf(0.0f);
  }
}

LogicalResult SM90Lowering::checkFragment(Operation *op, FlatSymbolRefAttr buf,
                                          Value frag, StringRef what) {
  if (!frag)
    return op->emitOpError() << "needs " << what << " computed earlier in "
                             << "the same role";
  BufferOp b = bufferOf(buf);
  int64_t held = cast<LLVM::LLVMStructType>(frag.getType()).getBody().size();
  if (b.getShape()[0] != 64 || b.getShape()[1] != 2 * held)
    return op->emitOpError()
           << buf << " is " << b.getShape()[0] << "x" << b.getShape()[1]
           << " but the " << what << " it names is 64x" << 2 * held;
  return success();
}

LogicalResult SM90Lowering::emitEpilogue(EpilogueOp op, RoleState &st) {
  if (st.inLoop)
    return op.emitOpError() << "inside the kv_loop is not lowered";
  if (failed(checkFragment(op, op.getAccAttr(), st.o, "O accumulator")))
    return failure();
  if (op.getStaging())
    return op.emitOpError() << "staging through smem is not lowered on sm_90a";
  if (qGroup) {
    if (!kernel.getSplitKv())
      return op.emitOpError() << "of a q_group kernel is lowered with "
                                 "split_kv only";
    return emitDecodeEpilogue(op, st);
  }
  int64_t n = bufferOf(op.getAccAttr()).getShape()[1];
  Value t = st.threadInRole;
  Value w = divu(t, c32(32)), ln = remu(t, c32(32));
  Value rowInTile = add(mul(w, c32(16)), divu(ln, c32(4)));
  Value qRow0 = add(mul(mBlock, c32(blockM)), add(c32(st.rowBegin), rowInTile));
  Value col0 = mul(remu(ln, c32(4)), c32(2));
  Value seqQ = param(kSeqQ);
  auto pairTy = VectorType::get({2}, f32);
  auto pairElemTy = VectorType::get({2}, elemTy);
  Value base = LLVM::GEPOp::create(
      b, loc, ptrGen, elemTy, param(kO),
      ValueRange{add64(mul64(ext64(batch), param(kOStrideB)),
                       mul64(ext64(head), param(kOStrideH)))});
  for (int i = 0; i < 2; ++i) {
    Value l = quadReduce(st.l[i], /*isMax=*/false);
    // Rows that saw no key (causal, seqQ > seqKV) output 0 and LSE -inf.
    Value empty =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, l, cf(0.0f));
    Value inv =
        select(empty, cf(0.0f), arith::DivFOp::create(b, loc, cf(1.0f), l));
    Value row = add(qRow0, c32(8 * i));
    Value inBounds = cmp(arith::CmpIPredicate::slt, row, seqQ);
    OpBuilder::InsertionGuard guard(b);
    openIf(inBounds);
    Value rowPtr =
        LLVM::GEPOp::create(b, loc, ptrGen, elemTy, base,
                            ValueRange{mul64(ext64(row), param(kOStrideS))});
    for (int64_t j = 0; j < n / 8; ++j) {
      Value pair = LLVM::UndefOp::create(b, loc, pairTy);
      for (int k = 0; k < 2; ++k) {
        int64_t idx = 4 * j + 2 * i + k;
        pair = LLVM::InsertElementOp::create(
            b, loc, pair, fmul(extract(st.o, idx), inv), c32(k));
      }
      Value packed = LLVM::FPTruncOp::create(b, loc, pairElemTy, pair);
      Value ptr = LLVM::GEPOp::create(b, loc, ptrGen, elemTy, rowPtr,
                                      ValueRange{add(col0, c32(8 * j))});
      LLVM::StoreOp::create(b, loc, packed, ptr, /*alignment=*/4);
    }
    if (op.getLse()) {
      // lse = ln(sum exp(s * scale)) = (m + log2 l) * ln 2.
      openIf(cmp(arith::CmpIPredicate::eq, remu(ln, c32(4)), c32(0)));
      // NVPTX has no native llvm.log2; lg2.approx is the instruction.
      Value log2l = LLVM::CallIntrinsicOp::create(
                        b, loc, f32, b.getStringAttr("llvm.nvvm.lg2.approx.f"),
                        ValueRange{l})
                        .getResult(0);
      Value lse = fmul(fadd(st.m[i], log2l), cf(float(M_LN2)));
      lse = select(empty, cf(-INFINITY), lse);
      storeLse(batch, head, seqQ, row, lse);
    }
  }
  return success();
}
