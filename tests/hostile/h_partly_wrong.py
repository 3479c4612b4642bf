"""A one-sided difference and a forgotten path: loses exactly those tests."""
ANSWERS = {"central_difference": WRONG["central_difference"], "adjoint_trace": WRONG["adjoint_trace"]}
EXPECT = {"score": 2, "flags": set(), "message": "one-sided difference"}
