BLOCK_SIZE = 1024

class TritonSiLU(Function):
    @staticmethod
    def forward(ctx, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        silu_forward_kernel[(triton.cdiv(n, BLOCK_SIZE),)](x, y, n, BLOCK_SIZE=BLOCK_SIZE)
        ctx.save_for_backward(x)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        # The classic slip: grad_output handed to the kernel as it came, without .contiguous().
        (x,) = ctx.saved_tensors
        grad_x = torch.empty_like(x)
        n = x.numel()
        silu_backward_kernel[(triton.cdiv(n, BLOCK_SIZE),)](x, grad_output, grad_x, n, BLOCK_SIZE=BLOCK_SIZE)
        return grad_x
