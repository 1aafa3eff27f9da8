#!/usr/bin/env bash
# mkvar.sh NAME EXP [STATS] : dense+sparse hd128 kernels (causal both) built with BLASST_EXP=EXP
set -euo pipefail
N=$1; E=$2; ST=${3:-true}; O=.device/$N; mkdir -p $O
base="dtype=bf16 head_dim=128 q_heads=32 kv_heads=8"
for c in false true; do
  printf 'name=dense_causal%s %s causal=%s\n' $c "$base" $c > $O/dense_causal$c.in.spec
  printf 'name=sparse_causal%s %s causal=%s sparsity=blasst:ln_lambda=-8.32 stats=%s\n' $c "$base" $c $ST > $O/sparse_causal$c.in.spec
  for k in dense sparse; do BLASST_EXP=$E ./build/bin/blasst-compile --spec $O/${k}_causal$c.in.spec --emit cubin -o $O/${k}_causal$c -v > $O/${k}_causal$c.ptxas.log 2>&1; done
done
grep -h "spill" $O/*.ptxas.log | sort | uniq -c
