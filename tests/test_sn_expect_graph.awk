# test_sn_expect_graph.awk — what libsn must report for a run of build/sntrain,
# derived from the trainer's own --dump-graph file: layers per type, forks,
# joins, and the trainer's calls per iteration (forward, backward, update)
# for its allocation style. Variables: alloc (caffe|darknet|dynamic),
# kernels (0|1). Prints "key value" lines, sorted by the caller.
/^tensor / {
    t = $2
    for (i = 3; i <= NF; i++) {
        if ($i == "consumers") cons[t] = $(i + 1)
        if ($i == "grad") grad[t] = $(i + 1)
    }
    if (cons[t] > 1) forks++
}
/^param / { nparams++ }
/^layer / {
    n = $2; type[n] = $3; nl++
    count[$3]++
    ins = ""; out = ""; np = 0
    for (i = 4; i <= NF; i++) {
        if ($i == "in") ins = $(i + 1)
        if ($i == "out") out = $(i + 1)
        if ($i == "params" && $(i + 1) != "-") np = split($(i + 1), pp, ",")
    }
    nin = (ins == "-") ? 0 : split(ins, in_ids, ",")
    if (nin > 1) joins++
    # forward calls
    f = 1
    if ($3 == "data") f = (alloc == "caffe") ? 2 : 0
    else if ($3 == "conv") f = (np == 2) ? 2 : 1
    else if ($3 == "fc") f = 2
    else if ($3 == "concat") f = nin
    if (alloc == "darknet" && grad[out] == 1) f++
    fwd += f
    # backward calls
    b = 1
    in_grad = (nin > 0 && grad[in_ids[1]] == 1)
    if ($3 == "data") b = 0
    else if ($3 == "conv") b = (np == 2 ? 1 : 0) + 1 + (in_grad ? 1 : 0)
    else if ($3 == "fc") b = 2 + (in_grad ? 1 : 0)
    else if ($3 == "concat") { b = 0; for (k = 1; k <= nin; k++) if (grad[in_ids[k]] == 1) b++ }
    else if ($3 == "add") b = nin
    bwd += b
    if (b > 0) bwd_layers++
}
END {
    for (t in count) printf "type %s %d\n", t, count[t]
    printf "forks %d\n", forks + 0
    printf "joins %d\n", joins + 0
    printf "forward_layers %d\n", nl
    printf "backward_layers %d\n", bwd_layers
    printf "forward_steps %d\n", fwd
    printf "backward_steps %d\n", bwd
    printf "update_steps %d\n", (kernels ? 1 : 4) * nparams
    printf "period %d\n", fwd + bwd + (kernels ? 1 : 4) * nparams
}
