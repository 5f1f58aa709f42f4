"""``faastlane graph``: a workflow as a picture (SVG, PNG) or as Mermaid/DOT text.

Stages, each its own module: :mod:`.model` turns the composed workflow and its plan into
nodes, edges and clusters; :mod:`.layout` places them (a layered layout, computed here so
that no Graphviz binary is needed); :mod:`.paint` draws the placed scene on a canvas that
:mod:`.svg` writes as SVG text and :mod:`.png` rasterises with Pillow; :mod:`.text` writes
the model as Mermaid or DOT for tools that lay it out themselves.
"""
