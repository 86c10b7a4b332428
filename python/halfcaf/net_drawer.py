"""Drawing nets with Graphviz (Caffe2's caffe2.python.net_drawer).

``GetPydotGraph`` draws ops as boxes and blobs as ellipses, with edges blob -> op -> blob; a blob
that an op writes again (an in-place op, a parameter update) gets a new node for each version, so
the graph stays acyclic. ``GetPydotGraphMinimal`` draws only the ops, with an edge from the op
that last wrote a blob to each op that reads it. Forward ops, gradient ops and optimizer ops
(parameter updates, learning rate, iteration counters) have different colours. The graphs are
``pydot.Dot`` objects: ``graph.create_svg()`` renders them with Graphviz's ``dot``.

Every function takes a core.Net, a NetDef or a list of OperatorDefs. From the command line::

    python -m halfcaf.net_drawer --input predict_net.pb --format svg --output_prefix out/

writes ``out/<net name>.svg`` (one file per net; a PlanDef draws each of its nets), and

    python -m halfcaf.net_drawer --net train.pbtxt --init_net init.pbtxt \
        --input_shape data=64,1,28,28 --output net.svg

labels the edges with the shapes and types the init net and the inputs imply (``tools/draw_net``
runs it from a checkout). An ONNX model (``--net model.onnx``) is imported first.
"""
import argparse
import collections
import json
import os
import re
import sys
import warnings

import pydot
from google.protobuf import message as _message
from google.protobuf import text_format

from halfcaf.proto import caffe2_pb2

# Node styles: forward ops green (as Caffe2 draws every op), gradient ops orange, optimizer ops
# blue, blobs as plain ellipses.
OP_STYLE = {
    'shape': 'box',
    'color': '#0F9D58',
    'style': 'filled',
    'fontcolor': '#FFFFFF',
}
GRADIENT_OP_STYLE = dict(OP_STYLE, color='#E8710A')
OPTIMIZER_OP_STYLE = dict(OP_STYLE, color='#4285F4')
BLOB_STYLE = {'shape': 'ellipse'}

# Op types that update parameters or drive the update schedule, beyond those whose type contains
# "Update" (MomentumSGDUpdate, MixedPrecisionAdamUpdate, ...).
OPTIMIZER_OP_TYPES = frozenset([
    'WeightedSum', 'ScaledWeightedSum', 'LearningRate', 'Iter', 'AtomicIter',
    'Adam', 'SparseAdam', 'Adagrad', 'SparseAdagrad', 'RowWiseSparseAdagrad', 'Adadelta',
    'SparseAdadelta', 'MomentumSGD', 'SparseMomentumSGD', 'RmsProp', 'Ftrl', 'SparseFtrl',
    'Wngrad', 'SparseWngrad', 'Lars', 'YellowFin', 'GFtrl', 'Storm', 'SparseStorm',
])

# Forward ops whose type ends in "Gradient" (they block or zero the gradient flowing back).
FORWARD_GRADIENT_NAMED_TYPES = frozenset(['StopGradient', 'ZeroGradient'])

FORMATS = ('svg', 'png', 'pdf', 'dot')


def IsGradientOp(op):
    """Whether ``op`` is a gradient op: flagged ``is_gradient_op`` or of a "...Gradient" type
    (but not StopGradient or ZeroGradient, which are forward ops)."""
    if op.is_gradient_op:
        return True
    return op.type.endswith('Gradient') and op.type not in FORWARD_GRADIENT_NAMED_TYPES


def IsOptimizerOp(op):
    """Whether ``op`` updates parameters (an optimizer's op, learning rate or iteration counter);
    gradient ops are not."""
    if IsGradientOp(op):
        return False
    return 'Update' in op.type or op.type in OPTIMIZER_OP_TYPES


def OpStyle(op):
    """The node attributes for ``op``: OP_STYLE, GRADIENT_OP_STYLE or OPTIMIZER_OP_STYLE."""
    if IsGradientOp(op):
        return GRADIENT_OP_STYLE
    if IsOptimizerOp(op):
        return OPTIMIZER_OP_STYLE
    return OP_STYLE


def _quote(text):
    """A DOT identifier that is ``text`` verbatim (double-quoted, with backslashes and quotes
    escaped), so that blob names with ':', spaces, quotes or non-ASCII characters are safe."""
    return '"' + text.replace('\\', '\\\\').replace('"', '\\"') + '"'


def _escape_label(name):
    """A quoted label showing ``name`` (as Caffe2 does with json.dumps, but keeping non-ASCII
    characters as they are)."""
    return json.dumps(name, ensure_ascii=False)


def _graph_name(name):
    return name if re.match(r'^[A-Za-z_][A-Za-z0-9_]*$', name) else _quote(name)


def _rectify_operator_and_name(operators_or_net, name):
    """(operators, graph name) of a NetDef, an object with Proto() (core.Net) or a list of
    OperatorDefs."""
    if isinstance(operators_or_net, caffe2_pb2.NetDef):
        operators = operators_or_net.op
        if name is None:
            name = operators_or_net.name
    elif hasattr(operators_or_net, 'Proto'):
        net = operators_or_net.Proto()
        if not isinstance(net, caffe2_pb2.NetDef):
            raise TypeError("expected a NetDef from Proto(), got %s" % type(net).__name__)
        operators = net.op
        if name is None:
            name = net.name
    else:
        operators = list(operators_or_net)
        for op in operators:
            if not isinstance(op, caffe2_pb2.OperatorDef):
                raise TypeError("expected a core.Net, a NetDef or a list of OperatorDefs; the "
                                "list holds a %s" % type(op).__name__)
        if name is None:
            name = 'unnamed'
    return operators, (name or 'unnamed')


def GetOpNodeProducer(append_output, **kwargs):
    """A function (op, op_id) -> pydot.Node labelled "name/Type (op#id)" (or "Type (op#id)"),
    with the output blobs on further lines when ``append_output``. Without ``kwargs`` the node's
    style is OpStyle(op); with them, ``kwargs`` are its attributes."""

    def ReallyGetOpNode(op, op_id):
        if op.name:
            node_name = '%s/%s (op#%d)' % (op.name, op.type, op_id)
        else:
            node_name = '%s (op#%d)' % (op.type, op_id)
        label = node_name
        if append_output:
            for output_name in op.output:
                label += '\n' + output_name
        attrs = kwargs if kwargs else OpStyle(op)
        return pydot.Node(_quote(node_name), label=_escape_label(label), **attrs)

    return ReallyGetOpNode


def GetBlobNodeProducer(**kwargs):
    """A function (node_name, label) -> pydot.Node with attributes ``kwargs`` (BLOB_STYLE when
    none are given)."""
    attrs = kwargs if kwargs else BLOB_STYLE

    def ReallyGetBlobNode(node_name, label):
        return pydot.Node(node_name, label=label, **attrs)

    return ReallyGetBlobNode


def _blob_node_id(blob, version):
    # A blob's version-th node; "#" and the version number cannot collide between blob names,
    # since the version is the text after the last "#".
    return _quote('%s#%d' % (blob, version))


def GetPydotGraph(operators_or_net, name=None, rankdir='LR', op_node_producer=None,
                  blob_node_producer=None, blob_shapes=None):
    """The net as a pydot.Dot: an op node per op, a blob node per version of each blob, edges
    from the blobs an op reads to it and from it to the blobs it writes.

    A blob read before anything writes it (an external input) is version 0; each op writing a
    blob already drawn starts a new version, so "fc1" written by FC and then by an in-place
    Relu is two nodes labelled "fc1".

    ``blob_shapes`` ({blob: (dims, dtype)}, e.g. from InferBlobShapes) labels each edge with its
    blob's type and shape, "float[64, 20, 24, 24]" (a blob's last shape when versions differ)."""
    if op_node_producer is None:
        op_node_producer = GetOpNodeProducer(False)
    if blob_node_producer is None:
        blob_node_producer = GetBlobNodeProducer()
    operators, name = _rectify_operator_and_name(operators_or_net, name)
    graph = pydot.Dot(_graph_name(name), graph_type='digraph', rankdir=rankdir)
    pydot_nodes = {}  # blob -> its current node
    pydot_node_counts = collections.defaultdict(int)  # blob -> its current version

    def blob_node(blob):
        node = blob_node_producer(_blob_node_id(blob, pydot_node_counts[blob]),
                                  label=_escape_label(blob))
        pydot_nodes[blob] = node
        graph.add_node(node)
        return node

    for op_id, op in enumerate(operators):
        op_node = op_node_producer(op, op_id)
        graph.add_node(op_node)
        for input_name in op.input:
            input_node = pydot_nodes.get(input_name)
            if input_node is None:
                input_node = blob_node(input_name)
            graph.add_edge(pydot.Edge(input_node, op_node, **_edge_label(blob_shapes, input_name)))
        for output_name in op.output:
            if output_name in pydot_nodes:
                # The op writes a blob drawn before: a new version.
                pydot_node_counts[output_name] += 1
            graph.add_edge(pydot.Edge(op_node, blob_node(output_name),
                                      **_edge_label(blob_shapes, output_name)))
    return graph


def _edge_label(blob_shapes, blob):
    if not blob_shapes or blob not in blob_shapes:
        return {}
    dims, dtype = blob_shapes[blob]
    return {'label': _quote('%s[%s]' % (dtype, ', '.join(str(d) for d in dims))),
            'fontsize': '10'}


def InferBlobShapes(net, init_net=None, input_shapes=None):
    """{blob: (dims, dtype name)} for the blobs of ``net`` whose shapes follow from the init
    net's outputs (run in a private workspace) and ``input_shapes`` ({blob: dims} as float, or
    {blob: (dims, dtype)}) through the operators' shape inference."""
    from halfcaf import _C, workspace
    known = {}
    if init_net is not None:
        caller = workspace.CurrentWorkspace()
        workspace.SwitchWorkspace('__net_drawer_shapes', True)
        try:
            workspace.ResetWorkspace()
            workspace.RunNetOnce(init_net)
            for blob in workspace.Blobs():
                dtype, dims, _ = workspace.BlobInfo(blob)
                if dims is not None:
                    known[blob] = (list(dims), dtype)
            workspace.ResetWorkspace()
        finally:
            workspace.SwitchWorkspace(caller)
    for blob, shape in (input_shapes or {}).items():
        if isinstance(shape, tuple) and len(shape) == 2 and isinstance(shape[1], str):
            known[str(blob)] = (list(shape[0]), shape[1])
        else:
            known[str(blob)] = (list(shape), 'float')
    proto = net.Proto() if hasattr(net, 'Proto') else net
    if not isinstance(proto, caffe2_pb2.NetDef):
        proto = caffe2_pb2.NetDef(op=list(proto))
    return {k: (list(v[0]), v[1])
            for k, v in _C.infer_shapes(proto.SerializeToString(), known).items()}


def GetPydotGraphMinimal(operators_or_net, name=None, rankdir='LR', minimal_dependency=False,
                         op_node_producer=None):
    """Only the ops: an edge from the op that last wrote a blob to each later op reading it (one
    edge per pair of ops).

    With ``minimal_dependency``, an op gets edges only from the parents that are not ancestors
    of its other parents: if c reads from a and b, and b reads from a, only b -> c is drawn
    (a -> c is implied)."""
    if op_node_producer is None:
        op_node_producer = GetOpNodeProducer(False)
    operators, name = _rectify_operator_and_name(operators_or_net, name)
    graph = pydot.Dot(_graph_name(name), graph_type='digraph', rankdir=rankdir)
    blob_parents = {}  # blob -> index of the op that last wrote it
    op_ancestry = collections.defaultdict(set)  # op index -> indices of all its ancestors
    op_nodes = []
    for op_id, op in enumerate(operators):
        op_node = op_node_producer(op, op_id)
        op_nodes.append(op_node)
        graph.add_node(op_node)
        parents = []
        for input_name in op.input:
            parent = blob_parents.get(input_name)
            if parent is not None and parent != op_id and parent not in parents:
                parents.append(parent)
        op_ancestry[op_id].update(parents)
        for parent in parents:
            op_ancestry[op_id].update(op_ancestry[parent])
        for parent in parents:
            if minimal_dependency and any(parent in op_ancestry[other] for other in parents):
                continue  # implied through another parent
            graph.add_edge(pydot.Edge(op_nodes[parent], op_node))
        for output_name in op.output:
            blob_parents[output_name] = op_id
    return graph


def GetOperatorMapForPlan(plan_def):
    """{plan name + net name: the net's ops} for each net of a PlanDef (an unnamed net is
    "<plan>_network_<index>")."""
    if hasattr(plan_def, 'Proto'):
        plan_def = plan_def.Proto()
    operator_map = collections.OrderedDict()
    for net_id, net in enumerate(plan_def.network):
        if net.HasField('name') and net.name:
            operator_map[plan_def.name + net.name] = net.op
        else:
            operator_map[plan_def.name + '_network_%d' % net_id] = net.op
    return operator_map


def GetGraphInJson(operators_or_net, output_filepath):
    """Writes the graph of GetPydotGraph as JSON to ``output_filepath``:
    {"nodes": [{"id", "label", "type": "op" | "blob", "op_id" (ops)}], "edges": [{"source",
    "target"}]}, with a node per version of each blob."""
    operators, _ = _rectify_operator_and_name(operators_or_net, None)
    blob_node_ids = {}  # blob -> node id of its current version
    nodes = []
    edges = []

    def add_blob(blob):
        blob_node_ids[blob] = len(nodes)
        nodes.append({'id': len(nodes), 'label': blob, 'type': 'blob'})
        return blob_node_ids[blob]

    for op_id, op in enumerate(operators):
        op_node_id = len(nodes)
        nodes.append({'id': op_node_id, 'label': op.name + '/' + op.type if op.name else op.type,
                      'op_id': op_id, 'type': 'op'})
        for input_name in op.input:
            source = blob_node_ids.get(input_name)
            if source is None:
                source = add_blob(input_name)
            edges.append({'source': source, 'target': op_node_id})
        for output_name in op.output:
            edges.append({'source': op_node_id, 'target': add_blob(output_name)})
    with open(output_filepath, 'w') as f:
        json.dump({'nodes': nodes, 'edges': edges}, f)


# ---- the command line -------------------------------------------------------------------------

def _parse_proto(content, cls):
    """``content`` (bytes) parsed as a ``cls`` in text format, or else binary; None if neither."""
    try:
        text = content.decode('utf-8')
    except UnicodeDecodeError:
        text = None
    if text is not None:
        proto = cls()
        try:
            text_format.Merge(text, proto)
            return proto
        except text_format.ParseError:
            pass
    proto = cls()
    try:
        # Some protobuf builds stop at a stray end-group tag with a warning, not an error, and
        # report how much they read: both mean the data is not a ``cls``.
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            read = proto.ParseFromString(content)
    except (_message.DecodeError, RuntimeError, ValueError):
        return None
    if caught or (read is not None and read != len(content)):
        return None
    return proto


def _looks_like_plan(plan):
    # A binary NetDef without ops of a type can parse as a PlanDef too; a real plan has steps,
    # and its steps name its nets.
    if plan is None or not plan.execution_step:
        return False
    names = set(n.name for n in plan.network)

    def step_ok(step):
        return all(n in names for n in step.network) and all(step_ok(s) for s in step.substep)

    return all(step_ok(s) for s in plan.execution_step)


def _looks_like_net(net):
    return net is not None and len(net.op) > 0 and all(op.type for op in net.op)


def LoadGraphs(path):
    """{graph name: operators} of the NetDef or PlanDef in file ``path`` (text or binary);
    raises ValueError when the file holds neither."""
    with open(path, 'rb') as f:
        content = f.read()
    if not content.strip():
        raise ValueError("%s is empty: expected a NetDef or PlanDef (text or binary)" % path)
    plan = _parse_proto(content, caffe2_pb2.PlanDef)
    if _looks_like_plan(plan):
        return GetOperatorMapForPlan(plan)
    net = _parse_proto(content, caffe2_pb2.NetDef)
    if _looks_like_net(net):
        return collections.OrderedDict([(net.name or 'unnamed', net.op)])
    raise ValueError("%s holds neither a NetDef nor a PlanDef (tried text and binary protobuf; a "
                     "net needs ops with a type)" % path)


def _LoadNet(path):
    """A NetDef from a file (text or binary)."""
    graphs = LoadGraphs(path)
    if len(graphs) != 1:
        raise ValueError('%s holds %d nets, not one' % (path, len(graphs)))
    name, ops = next(iter(graphs.items()))
    return caffe2_pb2.NetDef(name=name, op=list(ops))


def _LoadOnnx(path):
    """({name: ops} of an ONNX model's imported predict net, its init net, {input: (dims,
    dtype)} of its inputs with static dims)."""
    from halfcaf import _C
    with open(path, 'rb') as f:
        imported = _C.onnx_import(f.read(), path)
    predict = caffe2_pb2.NetDef()
    predict.ParseFromString(imported['predict'])
    init = caffe2_pb2.NetDef()
    init.ParseFromString(imported['init'])
    shapes = {name: (list(dims), dtype) for name, dtype, dims in imported['inputs']
              if all(d >= 0 for d in dims)}
    name = predict.name or os.path.splitext(os.path.basename(path))[0]
    return collections.OrderedDict([(name, predict.op)]), init, shapes


def _file_stem(name):
    # Graph names become file names: path separators and other unsafe characters become "_".
    return re.sub(r'[^A-Za-z0-9_.+-]', '_', name) or 'unnamed'


def main(argv=None):
    """The command line: draws each net of ``--input`` into <output_prefix><net name>.<format>.
    Returns 0, or exits with status 2 and a message on bad arguments or an unreadable input."""
    parser = argparse.ArgumentParser(prog='python -m halfcaf.net_drawer',
                                     description='Draws halfcaf / Caffe2 nets with Graphviz.')
    parser.add_argument('--input', '--net', type=str, required=True, dest='input',
                        help='a NetDef or PlanDef file (binary .pb or text .pbtxt), or an ONNX '
                             'model (.onnx, imported first)')
    parser.add_argument('--init_net', type=str, default=None,
                        help="the net's init net: shapes and types of what it makes label the "
                             'edges, with the shapes inferred from them')
    parser.add_argument('--input_shape', action='append', default=[],
                        metavar='BLOB=D,D,...[:TYPE]',
                        help='the shape (and type, float by default) of an input blob, e.g. '
                             'data=64,1,28,28 or label=64:int32; repeat for several')
    parser.add_argument('--output', type=str, default=None,
                        help='the output file when the input holds one net (instead of '
                             '<output_prefix><net name>.<format>)')
    parser.add_argument('--output_prefix', type=str, default='',
                        help='prepended to each output file name (a folder ends with "/")')
    parser.add_argument('--minimal', action='store_true',
                        help='draw only the ops (GetPydotGraphMinimal)')
    parser.add_argument('--minimal_dependency', action='store_true',
                        help='with --minimal, only the edges not implied by others')
    parser.add_argument('--append_output', action='store_true',
                        help="append each op's output blobs to its label")
    parser.add_argument('--rankdir', type=str, default='LR', choices=['LR', 'RL', 'TB', 'BT'],
                        help='the direction of the graph (default LR)')
    parser.add_argument('--format', type=str, default='svg', choices=FORMATS,
                        help='the output format (default svg; all but dot need Graphviz)')
    args = parser.parse_args(argv)

    if not os.path.isfile(args.input):
        parser.error('input file %s does not exist' % args.input)
    if args.init_net is not None and not os.path.isfile(args.init_net):
        parser.error('init net file %s does not exist' % args.init_net)
    input_shapes = {}
    for spec in args.input_shape:
        blob, _, rest = spec.partition('=')
        dims, _, dtype = rest.partition(':')
        try:
            input_shapes[blob] = ([int(d) for d in dims.split(',')], dtype or 'float')
        except ValueError:
            parser.error('--input_shape %r is not BLOB=D,D,...[:TYPE]' % spec)
        if not blob:
            parser.error('--input_shape %r is not BLOB=D,D,...[:TYPE]' % spec)
    init_net = None
    try:
        if args.input.endswith('.onnx'):
            graphs, init_net, onnx_shapes = _LoadOnnx(args.input)
            for blob, shape in onnx_shapes.items():
                input_shapes.setdefault(blob, shape)
        else:
            graphs = LoadGraphs(args.input)
        if args.init_net is not None:
            init_net = _LoadNet(args.init_net)
    except (OSError, ValueError, RuntimeError) as e:
        parser.error(str(e))
    if args.output is not None and len(graphs) != 1:
        parser.error('--output names one file but %s holds %d nets (use --output_prefix)'
                     % (args.input, len(graphs)))

    op_node_producer = GetOpNodeProducer(args.append_output)
    written = []
    for key, operators in graphs.items():
        if args.minimal:
            graph = GetPydotGraphMinimal(operators, name=key, rankdir=args.rankdir,
                                         minimal_dependency=args.minimal_dependency,
                                         op_node_producer=op_node_producer)
        else:
            shapes = None
            if init_net is not None or input_shapes:
                try:
                    shapes = InferBlobShapes(caffe2_pb2.NetDef(op=list(operators)), init_net,
                                             input_shapes)
                except RuntimeError as e:
                    parser.error('cannot infer the shapes: %s' % e)
            graph = GetPydotGraph(operators, name=key, rankdir=args.rankdir,
                                  op_node_producer=op_node_producer, blob_shapes=shapes)
        filename = args.output or args.output_prefix + _file_stem(key) + '.' + args.format
        directory = os.path.dirname(filename)
        if directory:
            os.makedirs(directory, exist_ok=True)
        try:
            if args.format == 'dot':
                data = graph.to_string().encode('utf-8')
            else:
                data = graph.create(format=args.format)
        except Exception as e:  # pydot raises plain Exceptions and OSErrors for Graphviz
            parser.exit(1, '%s: error: Graphviz could not render %s as %s (is `dot` installed? '
                           '--format dot needs no Graphviz): %s\n'
                        % (parser.prog, key, args.format, e))
        with open(filename, 'wb') as f:
            f.write(data)
        written.append(filename)
        print(filename)
    return 0


if __name__ == '__main__':
    sys.exit(main())
