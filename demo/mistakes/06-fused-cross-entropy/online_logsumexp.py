def online_logsumexp(x, chunk):
    m = torch.full(x.shape[:1], -math.inf, dtype=x.dtype)
    s = torch.zeros(x.shape[:1], dtype=x.dtype)
    for start in range(0, x.shape[1], chunk):
        part = x[:, start : start + chunk]
        # The classic slip: the new maximum is kept, but the sum so far is not rescaled to it.
        m = torch.maximum(m, part.max(dim=1).values)
        s = s + torch.exp(part - m[:, None]).sum(dim=1)
    return m + torch.log(s)
