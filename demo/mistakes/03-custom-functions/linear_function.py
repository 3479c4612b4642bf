class LinearFunction(Function):
    @staticmethod
    def forward(ctx, x, W, b=None):
        ctx.save_for_backward(x, W)
        ctx.has_bias = b is not None
        y = x @ W
        if b is not None:
            y = y + b
        return y

    @staticmethod
    def backward(ctx, grad_output):
        # The classic slip: the bias is added to every row, but its gradient is not summed over the batch.
        x, W = ctx.saved_tensors
        grad_x = grad_W = grad_b = None
        if ctx.needs_input_grad[0]:
            grad_x = grad_output @ W.T
        if ctx.needs_input_grad[1]:
            grad_W = x.T @ grad_output
        if ctx.has_bias and ctx.needs_input_grad[2]:
            grad_b = grad_output
        return grad_x, grad_W, grad_b
