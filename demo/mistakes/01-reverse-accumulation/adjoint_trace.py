def adjoint_trace(x1, x2):
    # The mistake from the blog post: only the path through the product reaches w1.
    w = primal_trace(x1, x2)
    w5_bar = 1.0
    w4_bar = w5_bar * 1.0
    w3_bar = w5_bar * 1.0
    w2_bar = w3_bar * w["w1"]
    w1_bar = w3_bar * w["w2"]
    return {"w1": w1_bar, "w2": w2_bar, "w3": w3_bar, "w4": w4_bar, "w5": w5_bar}
