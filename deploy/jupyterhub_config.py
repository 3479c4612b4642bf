"""JupyterHub for a class of the course on one machine: `make hub` starts it (coursetools/hub.py says what it sets
and which environment variables move its files and ports). For a real class, change the authenticator and the
spawner here (README: "A class on JupyterHub")."""

from coursetools.hub import HubClass, configure, prepare

c = get_config()  # noqa: F821  (provided by JupyterHub when it loads this file)

hub = HubClass.from_environment()
prepare(hub)
configure(c, hub)
