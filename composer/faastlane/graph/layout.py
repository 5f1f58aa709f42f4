"""A layered (Sugiyama-style) layout, top to bottom, with clusters laid out inside out.

For each state machine: break cycles (edges back to a state on the depth-first path are
laid out reversed), give states layers by longest path, doubled so that every edge
crosses at least one odd layer where its label sits (as Graphviz doubles ranks), chain a
dummy vertex through every layer an edge crosses, order each layer by barycenters
(keeping the order with the fewest crossings), then give x positions that pull each
vertex toward its neighbours while keeping the layer's order and gaps. A Parallel or Map
state is laid out first from the inside (its branches side by side) and then placed as
one box. Everything is in pixels; :func:`layout` returns absolute positions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from . import fonts
from .model import Cluster, Diagram, Edge, Graph, Node

NAME_SIZE, DETAIL_SIZE, LABEL_SIZE, TITLE_SIZE = 13, 11, 10, 16
PAD_X, PAD_Y = 10, 6
GAP = 26  # between boxes of a layer
DUMMY_GAP = 10  # around the bend point of an edge
LAYER_GAP = 14
CLUSTER_PAD = 12
LANE_GAP = 16
MARGIN = 16
LABEL_WRAP = 34  # characters per line of an edge label
DETAIL_WRAP = 40  # ... and of a detail line in a box
SWEEPS = 8
POSITION_PASSES = 16

Point = tuple[float, float]


@dataclass
class Box:
    x: float
    y: float
    w: float
    h: float
    item: Node | Cluster | None = None
    depth: int = 0  # clusters: how deeply nested

    def moved(self, dx: float, dy: float) -> Box:
        return Box(self.x + dx, self.y + dy, self.w, self.h, self.item, self.depth)

    def overlaps(self, other: Box) -> bool:
        return (self.x < other.x + other.w and other.x < self.x + self.w
                and self.y < other.y + other.h and other.y < self.y + self.h)

    def contains(self, other: Box) -> bool:
        return (self.x <= other.x and self.y <= other.y and other.x + other.w <= self.x + self.w
                and other.y + other.h <= self.y + self.h)


@dataclass
class Route:
    edge: Edge
    points: list[Point]
    label: list[str] = field(default_factory=list)
    label_box: Box | None = None
    back: bool = False  # drawn against the layout's direction (a loop)


@dataclass
class Caption:
    x: float
    y: float  # top of the text
    text: str
    size: int
    role: str = "caption"  # caption / title / time


@dataclass
class Scene:
    """Everything to draw, in absolute pixels."""

    width: float = 0
    height: float = 0
    nodes: list[Box] = field(default_factory=list)
    clusters: list[Box] = field(default_factory=list)
    lanes: list[Box] = field(default_factory=list)  # a branch's area inside a cluster
    routes: list[Route] = field(default_factory=list)
    captions: list[Caption] = field(default_factory=list)

    def merge(self, other: Scene, dx: float, dy: float) -> None:
        self.nodes += [b.moved(dx, dy) for b in other.nodes]
        self.clusters += [b.moved(dx, dy) for b in other.clusters]
        self.lanes += [b.moved(dx, dy) for b in other.lanes]
        self.routes += [Route(r.edge, [(x + dx, y + dy) for x, y in r.points], r.label,
                              None if r.label_box is None else r.label_box.moved(dx, dy),
                              r.back) for r in other.routes]
        self.captions += [Caption(c.x + dx, c.y + dy, c.text, c.size, c.role)
                          for c in other.captions]


# ----------------------------------------------------------------------------- text


def wrap(text: str, limit: int = LABEL_WRAP) -> list[str]:
    """Break a label at spaces into lines of about ``limit`` characters."""
    lines: list[str] = []
    for word in text.split(" "):
        if lines and len(lines[-1]) + 1 + len(word) <= limit:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines or [""]


def text_block(lines: list[tuple[str, int]]) -> tuple[float, float]:
    """Width and height of lines given as (text, size)."""
    return (max((fonts.width(t, s) for t, s in lines), default=0.0),
            float(sum(fonts.line_height(s) for _, s in lines)))


def node_lines(node: Node) -> list[tuple[str, int]]:
    lines = [(node.name, NAME_SIZE)] + [(part, DETAIL_SIZE) for line in node.lines if line
                                        for part in wrap(line, DETAIL_WRAP)]
    if node.time:
        lines.append((node.time, DETAIL_SIZE))
    return lines


def cluster_header(cluster: Cluster) -> list[tuple[str, int]]:
    lines = [(f"{cluster.kind} {cluster.name}", NAME_SIZE)]
    lines += [(line, DETAIL_SIZE) for line in cluster.lines]
    if cluster.time:
        lines.append((cluster.time, DETAIL_SIZE))
    return lines


# ----------------------------------------------------------------------------- blocks


def _node_scene(node: Node) -> Scene:
    w, h = text_block(node_lines(node))
    w, h = max(w + 2 * PAD_X, 56.0), h + 2 * PAD_Y
    if node.kind == "Choice":
        w += 24  # the hexagon's points
    return Scene(w, h, nodes=[Box(0, 0, w, h, node)])


def _cluster_scene(cluster: Cluster, depth: int) -> Scene:
    header = cluster_header(cluster)
    header_w, header_h = text_block(header)
    lanes = [diagram_scene(d, depth + 1) for d in cluster.diagrams]
    titles = [(d.title, DETAIL_SIZE) for d in cluster.diagrams]
    title_h = fonts.line_height(DETAIL_SIZE)
    lanes_w = sum(max(s.width, fonts.width(t, DETAIL_SIZE)) + 2 * PAD_X
                  for s, (t, _) in zip(lanes, titles, strict=True)) + LANE_GAP * (len(lanes) - 1)
    width = max(header_w, lanes_w) + 2 * CLUSTER_PAD
    lanes_h = max((s.height for s in lanes), default=0.0) + title_h + 2 * PAD_Y
    height = CLUSTER_PAD + header_h + PAD_Y + lanes_h + CLUSTER_PAD
    scene = Scene(width, height, clusters=[Box(0, 0, width, height, cluster, depth)])
    y = CLUSTER_PAD
    for text, size in header:
        scene.captions.append(Caption(CLUSTER_PAD, y, text, size,
                                      "time" if text == cluster.time else "caption"))
        y += fonts.line_height(size)
    top = CLUSTER_PAD + header_h + PAD_Y
    x = CLUSTER_PAD + (width - 2 * CLUSTER_PAD - lanes_w) / 2
    for inner, (title, _) in zip(lanes, titles, strict=True):
        lane_w = max(inner.width, fonts.width(title, DETAIL_SIZE)) + 2 * PAD_X
        scene.lanes.append(Box(x, top, lane_w, lanes_h))
        scene.captions.append(Caption(x + PAD_X / 2, top + PAD_Y / 2, title, DETAIL_SIZE))
        scene.merge(inner, x + (lane_w - inner.width) / 2, top + title_h + PAD_Y)
        x += lane_w + LANE_GAP
    return scene


# ----------------------------------------------------------------------------- layering


@dataclass
class _Vertex:
    id: str
    w: float
    h: float
    scene: Scene | None = None  # a state or cluster; None for an edge's dummy
    label: list[str] = field(default_factory=list)
    layer: int = 0
    x: float = 0.0  # centre
    y: float = 0.0  # top

    @property
    def dummy(self) -> bool:
        return self.scene is None


def _depth_first(ids: list[str], edges: list[Edge]) -> tuple[list[str], set[int]]:
    """Visit order, and the indexes of edges that go back to a state on the path."""
    out: dict[str, list[int]] = {i: [] for i in ids}
    for index, edge in enumerate(edges):
        out[edge.source].append(index)
    order: list[str] = []
    back: set[int] = set()
    status: dict[str, int] = {}  # 1 on the path, 2 done

    def visit(vertex: str) -> None:
        status[vertex] = 1
        order.append(vertex)
        for index in out[vertex]:
            target = edges[index].target
            if status.get(target) == 1:
                back.add(index)
            elif target not in status:
                visit(target)
        status[vertex] = 2

    for vertex in ids:
        if vertex not in status:
            visit(vertex)
    return order, back


def _ranks(order: list[str], arcs: list[tuple[str, str]]) -> dict[str, int]:
    """Longest-path layering of an acyclic graph."""
    preds: dict[str, list[str]] = {v: [] for v in order}
    indegree = {v: 0 for v in order}
    succs: dict[str, list[str]] = {v: [] for v in order}
    for u, v in arcs:
        preds[v].append(u)
        succs[u].append(v)
        indegree[v] += 1
    rank = {v: 0 for v in order}
    ready = [v for v in order if indegree[v] == 0]
    while ready:
        u = ready.pop(0)
        for v in succs[u]:
            rank[v] = max(rank[v], rank[u] + 1)
            indegree[v] -= 1
            if indegree[v] == 0:
                ready.append(v)
    return rank


def _crossings(layers: list[list[str]], links: dict[str, list[str]]) -> int:
    total = 0
    for upper, lower in zip(layers, layers[1:], strict=False):  # adjacent pairs
        where = {v: i for i, v in enumerate(lower)}
        pairs = [(i, where[t]) for i, v in enumerate(upper) for t in links.get(v, ())
                 if t in where]
        total += sum(1 for a in range(len(pairs)) for b in range(a + 1, len(pairs))
                     if (pairs[a][0] - pairs[b][0]) * (pairs[a][1] - pairs[b][1]) < 0)
    return total


def _barycenter(where: dict[str, int], neighbours: dict[str, list[str]],
                item: tuple[int, str]) -> float:
    """Where a vertex (``item``: its index in its layer, its id) sorts: the mean position
    of its neighbours in the reference layer (``where``), else where it is."""
    index, vertex = item
    linked = [where[n] for n in neighbours.get(vertex, ()) if n in where]
    return sum(linked) / len(linked) if linked else float(index)


def _order(layers: list[list[str]], down: dict[str, list[str]],
           up: dict[str, list[str]]) -> list[list[str]]:
    """Barycenter sweeps; the layering with the fewest crossings seen."""
    best = [list(layer) for layer in layers]
    best_count = _crossings(best, down)
    current = [list(layer) for layer in layers]
    for sweep in range(SWEEPS):
        indexes = range(1, len(current)) if sweep % 2 == 0 else range(len(current) - 2, -1, -1)
        neighbours = up if sweep % 2 == 0 else down
        for k in indexes:
            ref = current[k - 1] if sweep % 2 == 0 else current[k + 1]
            key = partial(_barycenter, {v: i for i, v in enumerate(ref)}, neighbours)
            current[k] = [v for _, v in sorted(enumerate(current[k]), key=key)]
        count = _crossings(current, down)
        if count < best_count:
            best, best_count = [list(layer) for layer in current], count
    return best


def _separation(a: _Vertex, b: _Vertex) -> float:
    gap = DUMMY_GAP if a.dummy or b.dummy else GAP
    return (a.w + b.w) / 2 + gap


def _place(row: list[_Vertex], desired: list[float]) -> list[float]:
    """Centres as near ``desired`` as the row's order and gaps allow: the mean of a
    left-first and a right-first packing (each keeps every gap, so their mean does)."""
    n = len(row)
    seps = [_separation(row[i - 1], row[i]) for i in range(1, n)]
    left = list(desired)
    for i in range(1, n):
        left[i] = max(left[i], left[i - 1] + seps[i - 1])
    for i in range(n - 2, -1, -1):
        left[i] = min(left[i], left[i + 1] - seps[i])
    right = list(desired)
    for i in range(n - 2, -1, -1):
        right[i] = min(right[i], right[i + 1] - seps[i])
    for i in range(1, n):
        right[i] = max(right[i], right[i - 1] + seps[i - 1])
    return [(a + b) / 2 for a, b in zip(left, right, strict=True)]


def _positions(rows: list[list[_Vertex]], down: dict[str, list[str]],
               up: dict[str, list[str]], vertices: dict[str, _Vertex]) -> None:
    for row in rows:  # packed from the left to start with
        x = 0.0
        for i, vertex in enumerate(row):
            x = 0.0 if i == 0 else x + _separation(row[i - 1], vertex)
            vertex.x = x
    for sweep in range(POSITION_PASSES):
        order = rows if sweep % 2 == 0 else rows[::-1]
        links, other = (up, down) if sweep % 2 == 0 else (down, up)
        for row in order:
            desired = []
            for vertex in row:
                linked = [vertices[n].x for n in links.get(vertex.id, ())]
                if sweep >= POSITION_PASSES - 2:  # the last passes: both sides
                    linked += [vertices[n].x for n in other.get(vertex.id, ())]
                desired.append(sum(linked) / len(linked) if linked else vertex.x)
            for vertex, x in zip(row, _place(row, desired), strict=True):
                vertex.x = x


def diagram_scene(diagram: Diagram, depth: int = 0) -> Scene:
    """Lay out one state machine (its clusters first, from the inside)."""
    vertices: dict[str, _Vertex] = {}
    for item in diagram.items:
        scene = _cluster_scene(item, depth) if isinstance(item, Cluster) else _node_scene(item)
        vertices[item.id] = _Vertex(item.id, scene.width, scene.height, scene)
    ids = [item.id for item in diagram.items]
    loops = [e for e in diagram.edges if e.source == e.target]
    edges = [e for e in diagram.edges if e.source != e.target]
    order, back = _depth_first(ids, edges)
    arcs = [(e.target, e.source) if i in back else (e.source, e.target)
            for i, e in enumerate(edges)]
    rank = _ranks(order, arcs)
    for vertex_id, r in rank.items():
        vertices[vertex_id].layer = 2 * r
    # Chains of dummies, one per layer an edge crosses; a labelled edge's label rides on
    # the dummy next to its source.
    chains: list[list[str]] = []
    down: dict[str, list[str]] = {}
    up: dict[str, list[str]] = {}
    for index, (edge, (u, v)) in enumerate(zip(edges, arcs, strict=True)):
        chain = [u]
        first, last = vertices[u].layer, vertices[v].layer
        label = wrap(edge.label) if edge.label else []
        for layer in range(first + 1, last):
            near_source = layer == (last - 1 if index in back else first + 1)
            dummy = _Vertex(f"~{index}~{layer}", 2.0, 0.0, layer=layer)
            if label and near_source:
                lw, lh = text_block([(line, LABEL_SIZE) for line in label])
                dummy.w, dummy.h, dummy.label = lw + 12, lh + 4, label
            vertices[dummy.id] = dummy
            chain.append(dummy.id)
        chain.append(v)
        chains.append(chain)
        for a, b in zip(chain, chain[1:], strict=False):  # adjacent pairs
            down.setdefault(a, []).append(b)
            up.setdefault(b, []).append(a)
    depth_layers = max((v.layer for v in vertices.values()), default=0) + 1
    layers: list[list[str]] = [[] for _ in range(depth_layers)]
    for vertex_id in order:
        layers[vertices[vertex_id].layer].append(vertex_id)
    for chain in chains:
        for vertex_id in chain[1:-1]:
            layers[vertices[vertex_id].layer].append(vertex_id)
    layers = _order(layers, down, up)
    rows = [[vertices[v] for v in layer] for layer in layers]
    _positions(rows, down, up, vertices)
    # y: each layer as tall as its tallest box, boxes centred in it.
    tops: list[float] = []
    heights: list[float] = []
    y = 0.0
    for row in rows:
        height = max((v.h for v in row), default=0.0)
        tops.append(y)
        heights.append(height)
        for vertex in row:
            vertex.y = y + (height - vertex.h) / 2
        y += height + LAYER_GAP
    left = min((v.x - v.w / 2 for v in vertices.values()), default=0.0)
    right = max((v.x + v.w / 2 for v in vertices.values()), default=0.0)
    scene = Scene(right - left, max(y - LAYER_GAP, 0.0))
    for vertex in vertices.values():
        vertex.x -= left
        if vertex.scene is not None:
            scene.merge(vertex.scene, vertex.x - vertex.w / 2, vertex.y)
    for index, (edge, chain) in enumerate(zip(edges, chains, strict=True)):
        scene.routes.append(_route(edge, [vertices[v] for v in chain], tops, heights,
                                   index in back, down, up, vertices))
    for edge in loops:
        scene.routes.append(_loop(edge, vertices[edge.source]))
    return scene


def _port(vertex: _Vertex, other: _Vertex, links: list[str],
          vertices: dict[str, _Vertex]) -> float:
    """Where on its bottom (or top) side an edge leaves ``vertex``: the side's width
    shared among its edges, in the order of where they go."""
    ends = sorted(vertices[n].x for n in links)
    if len(ends) <= 1:
        return vertex.x
    slot = ends.index(other.x) if other.x in ends else len(ends) // 2
    usable = min(vertex.w * 0.6, 24.0 * len(ends))
    return vertex.x - usable / 2 + usable * slot / (len(ends) - 1)


def _route(edge: Edge, chain: list[_Vertex], tops: list[float], heights: list[float],
           back: bool, down: dict[str, list[str]], up: dict[str, list[str]],
           vertices: dict[str, _Vertex]) -> Route:
    head, tail = chain[0], chain[-1]
    start = _port(head, chain[1], down[head.id], vertices)
    # Straight down to the bottom of the source's layer and straight into the target's
    # from the top of its layer: bends only between layers, where no box is.
    points: list[Point] = [(start, head.y + head.h),
                           (start, tops[head.layer] + heights[head.layer])]
    label_box = None
    for dummy in chain[1:-1]:
        x = dummy.x - dummy.w / 2 + 2 if dummy.label else dummy.x
        points += [(x, tops[dummy.layer]), (x, tops[dummy.layer] + heights[dummy.layer])]
        if dummy.label:
            label_box = Box(dummy.x - dummy.w / 2 + 6, dummy.y, dummy.w - 6, dummy.h)
    end = _port(tail, chain[-2], up[tail.id], vertices)
    points += [(end, tops[tail.layer]), (end, tail.y)]
    route = Route(edge, _distinct(points), chain_label(chain), label_box, back)
    if back:
        route.points.reverse()
    return route


def _distinct(points: list[Point]) -> list[Point]:
    """The points without repeats (a box as tall as its layer adds none)."""
    kept = [points[0]]
    for point in points[1:]:
        if point != kept[-1]:
            kept.append(point)
    return kept


def chain_label(chain: list[_Vertex]) -> list[str]:
    return next((v.label for v in chain if v.label), [])


def _loop(edge: Edge, vertex: _Vertex) -> Route:
    right, top = vertex.x + vertex.w / 2, vertex.y
    points = [(right, top + vertex.h * 0.3), (right + 14, top + vertex.h * 0.3),
              (right + 14, top + vertex.h * 0.7), (right, top + vertex.h * 0.7)]
    return Route(edge, points, wrap(edge.label) if edge.label else [])


# ----------------------------------------------------------------------------- whole


Legend = Callable[[Scene, float, float], tuple[float, float]]


def layout(graph: Graph, legend: Legend | None = None) -> Scene:
    """The whole picture: title, the workflow, then the legend (``legend`` adds its
    boxes at a given top-left corner and returns the width and height it took)."""
    body = diagram_scene(graph.diagram)
    scene = Scene()
    title_h = fonts.line_height(TITLE_SIZE)
    scene.captions.append(Caption(MARGIN, MARGIN, graph.name, TITLE_SIZE, "title"))
    scene.captions.append(Caption(MARGIN, MARGIN + title_h, graph.subtitle, DETAIL_SIZE))
    top = MARGIN + title_h + fonts.line_height(DETAIL_SIZE) + 12
    width = max(body.width, fonts.width(graph.name, TITLE_SIZE),
                fonts.width(graph.subtitle, DETAIL_SIZE))
    scene.merge(body, MARGIN + (width - body.width) / 2, top)
    bottom = top + body.height + 20
    if legend is not None:
        taken_w, taken_h = legend(scene, MARGIN, bottom)
        width = max(width, taken_w)
        bottom += taken_h
    scene.width = width + 2 * MARGIN
    scene.height = bottom + MARGIN
    return scene
