"""Right answers, and a cell whose outputs carry HTML with script, JavaScript, SVG and markdown with a script link."""
APPEND = ["""from IPython.display import HTML, Javascript, SVG, Markdown, display
display(HTML("<b>bold</b><script>pwn('out1')</script><img src=x onerror=\\"pwn('out2')\\">"))
display(Javascript("pwn('out3')"))
display(SVG('<svg xmlns="http://www.w3.org/2000/svg" onload="pwn(1)"><script>pwn("out4")</script></svg>'))
display(Markdown("[x](javascript:pwn('out5'))"))
print("<script>pwn('out6')</script>")"""]
EXPECT = {"score": 7, "flags": set()}
