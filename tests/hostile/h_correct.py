"""Every answer right."""
EXPECT = {"score": 7, "flags": set()}
