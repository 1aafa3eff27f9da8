// A Hopper-only NVVM op in a kernel: wgmma exists on sm_90a only.
llvm.func @hopper_only() attributes {nvvm.kernel} {
  nvvm.wgmma.fence.aligned
  llvm.return
}
