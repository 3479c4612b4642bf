"""Right answers, with IPython.display and a plot in the learner's own cells (honest uses of the display)."""
APPEND = ["""from IPython.display import display, Markdown
display(Markdown('**my notes**'))""", """import matplotlib.pyplot as plt
plt.plot([primal_trace(x, 1.0)['w5'] for x in range(5)])
plt.show()"""]
EXPECT = {"score": 7, "flags": set()}
