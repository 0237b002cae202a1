"""The bundled scenarios: one file each, loaded by name (``ys.load_scenario("durable-start")``).

Installed, this folder is the package ``yieldstar_sim.scenarios``; each file is also a model to
copy: a module that defines ``scenario = ys.Scenario(...)``.
"""
