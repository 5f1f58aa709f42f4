"""The binary inspector: no native code but the runtime's gate may change PKRU.

Protection keys isolate functions only if nothing else can write PKRU. ERIM's answer,
followed here: before any code runs, scan every executable byte of every ELF file an
action ships or loads for ``WRPKRU`` and ``XRSTOR`` at every offset, and accept only
the runtime's own checked gate sequence (``cpython-mpk/Modules/mpk_pkru.c``).

Modules, one concern each:

- ``faastlane.runtime.isolation.pkru_scan`` -- the matcher (standard library; ships in actions);
- ``elf_files`` -- pyelftools: executable segments and sections, symbols;
- ``gate`` -- the gate's bytes, from ``_faastlane`` or compiled from the C source;
- ``disassembly`` -- capstone listings around a finding;
- ``waivers`` -- files accepted with a reason (``faastlane.json``);
- ``scanner`` -- files and folders to findings; ``report`` -- showing them;
- ``targets`` -- what ``faastlane inspect`` was pointed at (runtime, app, action, paths);
- ``shipment`` -- the checks ``compose``/``package``/``deploy`` run;
- ``command`` -- the ``faastlane inspect`` subcommand.
"""
