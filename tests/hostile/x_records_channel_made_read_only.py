"""`adjoint_trace` is blank; when a probe calls it, it makes the probe channel's folder read-only (so that nothing
more could be written, or taken out). A changed channel folder disturbs every record of its cell: none is judged.
primal_trace and central_difference are right: 4 of 7."""
ANSWERS = {"adjoint_trace": '''def adjoint_trace(x1, x2):
    import os
    os.chmod(os.path.join(os.getcwd(), '..', 'probe'), 0o500)
    return {'w1': 0.0, 'w2': 0.0, 'w3': 1.0, 'w4': 1.0, 'w5': 1.0}'''}
EXPECT = {"score": 4, "flags": {"record_forged"}, "message": "did not judge"}
