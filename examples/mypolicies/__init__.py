"""A researcher's own scheduling policies, one module per engine.

This folder is a package (it has this ``__init__.py``), so its modules can
import each other (``from mypolicies.profile import Profile``) and a spec
names a class by the file that defines it::

    policies = [{name = "AgedSRPT", use = "mypolicies/aged_srpt.py:AgedSRPT"}]

schedlab then hashes and ships the whole folder: editing any module of the
package changes the code digest of every policy in it (see
docs/extending.md, "Provenance"). Nothing is imported here on purpose:
loading one policy does not import the others.

Everything here imports only ``schedlab.api``.
"""
