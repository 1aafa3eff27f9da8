// RUN: blasst-opt %s --blasst-annotate-item-loops | FileCheck %s
// Only a back-edge (a branch to a block that dominates its own) named
// blasst.item_loop gets llvm.licm.disable; the loop's entry branch, other
// loops' back-edges and conditional back-edges without the name stay as they are.

// CHECK: #[[$LICM:.*]] = #llvm.loop_licm<disable = true>
// CHECK: #[[$ANN:.*]] = #llvm.loop_annotation<licm = #[[$LICM]]>
// CHECK-LABEL: llvm.func @tiles
llvm.func @tiles(%n: i32) {
  %c0 = llvm.mlir.constant(0 : i32) : i32
  %c1 = llvm.mlir.constant(1 : i32) : i32
  // The entry branch: not a back-edge.
  // CHECK: llvm.br ^bb1(%{{.*}} : i32){{$}}
  llvm.br ^bb1(%c0 : i32) loc("blasst.item_loop")
^bb1(%i: i32):
  %more = llvm.icmp "slt" %i, %n : i32
  // CHECK: llvm.cond_br %{{.*}}, ^bb2, ^bb{{[0-9]+}}{{$}}
  llvm.cond_br %more, ^bb2, ^bb4 loc("blasst.item_loop")
^bb2:
  // An inner loop without the name: untouched.
  // CHECK: llvm.br ^bb3(%{{.*}} : i32){{$}}
  llvm.br ^bb3(%c0 : i32)
^bb3(%j: i32):
  %j1 = llvm.add %j, %c1 : i32
  %inner = llvm.icmp "slt" %j1, %n : i32
  // CHECK: llvm.cond_br %{{.*}}, ^bb3(%{{.*}} : i32), ^bb{{[0-9]+}}{{$}}
  llvm.cond_br %inner, ^bb3(%j1 : i32), ^bb5
^bb5:
  %i1 = llvm.add %i, %c1 : i32
  // The tile loop's back-edge.
  // CHECK: llvm.br ^bb1(%{{.*}} : i32) {loop_annotation = #[[$ANN]]}
  llvm.br ^bb1(%i1 : i32) loc("blasst.item_loop")
^bb4:
  llvm.return
}
