"""Right answers, plus a link to /etc/shadow in a subfolder; printed (and the answer wrong) if it arrives."""
LINKS = {"data/shadow.txt": "/etc/shadow", "passwd": "/etc/passwd"}
ANSWERS = {"central_difference": """import os
SEEN = [open(p).read() for p in ['data/shadow.txt', 'passwd'] if os.path.exists(p)]
print('SHADOW', SEEN)
def central_difference(f, x, h):
    return (f(x + h) - f(x - h)) / (2 * h) + len(SEEN)"""}
EXPECT = {"score": 7, "flags": {"symlink"}, "message": "data/shadow.txt", "absent": ["root:"]}
