class FunctionalLinear(Function):
    @staticmethod
    def forward(ctx, x, weight, bias=None):
        ctx.save_for_backward(x, weight)
        ctx.has_bias = bias is not None
        output = (weight.unsqueeze(0) * x.unsqueeze(1)).sum(dim=-1)
        return output + bias.unsqueeze(0) if bias is not None else output

    @staticmethod
    def backward(ctx, grad_output):
        # The seed's backward: one weight and one bias gradient per sample, left for autograd to sum.
        x, weight = ctx.saved_tensors
        grad_x = (grad_output.unsqueeze(-1) * weight.unsqueeze(0)).sum(dim=1)
        grad_weight = grad_output.unsqueeze(-1) * x.unsqueeze(-2)
        grad_bias = grad_output.clone() if ctx.has_bias else None
        return grad_x, grad_weight, grad_bias
