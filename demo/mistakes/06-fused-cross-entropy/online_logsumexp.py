def online_logsumexp(chunks):
    m, s = -math.inf, 0.0
    for part in chunks:
        # The classic slip: the new maximum is kept, but the sum so far is not rescaled to it.
        m = part.max(dim=1).values.clamp(min=m)
        s = s + torch.exp(part - m[:, None]).sum(dim=1)
    return m + torch.log(s)
