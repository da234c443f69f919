//! Basic blocks and the control-flow graph of a method body.
//!
//! A block starts at every *leader*: the first instruction; every branch, switch and
//! leave target; the instruction after every instruction that does not simply fall
//! through (branches, switches, leave, ret, jmp, throw, rethrow, endfinally, endfilter);
//! the first instruction of every try, handler and filter region; and the instruction
//! after the last one of every try and handler region (a filter region ends where its
//! handler starts, already a leader). So every region is a whole number of blocks.
//!
//! Edges carry an [`EdgeKind`]. Exceptional edges run from every block of a try region to
//! its handler's first block and, for filter clauses, also to the filter's first block:
//! a handler is reachable exactly when some instruction of its try region is, which is
//! also the rule of the stack analysis (see [`super::stack`]) and of the JIT's importer.
//! `endfilter` and `endfinally` have no successors (the runtime resumes elsewhere: the
//! handler, already reached through the exceptional edge, or a `leave` target, already
//! reached from the `leave`).
//!
//! Blocks are named by [`BlockId`]s, numbered `0..block_count()` in code order. The graph
//! itself is a [`petgraph::graph::DiGraph`], available through
//! [`ControlFlowGraph::graph`] for petgraph's algorithms (dominators, strongly connected
//! components, ...); a block's node there is [`BlockId::node`], and
//! [`BlockId::from_node`] converts back.

use super::layout::{Layout, NONE};
use crate::body::MethodBody;
use crate::error::{Error, Result};
use crate::graph::{InstrId, Operand};
use crate::opcode::Flow;
use petgraph::Direction;
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::EdgeRef;

/// The id of a basic block of a [`ControlFlowGraph`]. Blocks are numbered
/// `0..block_count()` in code order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlockId(u32);

impl BlockId {
    /// The id of the block numbered `index` (blocks are numbered `0..block_count()` in
    /// code order). An index past the last block names no block: the graph's lookups
    /// then answer `None` or nothing.
    #[inline]
    pub fn new(index: usize) -> Self {
        BlockId(u32::try_from(index).unwrap_or(u32::MAX))
    }

    /// The block's number, in code order; indexes [`ControlFlowGraph::reachable`].
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }

    /// The block's node in [`ControlFlowGraph::graph`].
    #[inline]
    pub fn node(self) -> NodeIndex<u32> {
        NodeIndex::new(self.index())
    }

    /// The block whose node in [`ControlFlowGraph::graph`] is `node`.
    #[inline]
    pub fn from_node(node: NodeIndex<u32>) -> Self {
        BlockId::new(node.index())
    }
}

/// A maximal straight-line run of instructions, entered only at its first instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BasicBlock {
    /// The first instruction (a leader).
    pub first: InstrId,
    /// The last instruction (inclusive).
    pub last: InstrId,
    /// Number of instructions, at least 1.
    pub len: u32,
}

/// Why control can go from one block to another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EdgeKind {
    /// Falling through to the next instruction (also after a conditional branch).
    Fallthrough,
    /// The target of `br`, `brtrue`, `beq`, ...
    Branch,
    /// Case `case` of a `switch` (one edge per table entry, duplicates included).
    Switch {
        /// Index in the switch table.
        case: u32,
    },
    /// The target of `leave`/`leave.s` (entered with an empty stack).
    Leave,
    /// From a try block to the filter or handler entry of clause `clause` (its index in
    /// [`MethodBody::clauses`]).
    Exception {
        /// Index of the clause.
        clause: u32,
    },
}

/// The basic blocks of a body and the edges between them.
#[derive(Debug, Clone)]
pub struct ControlFlowGraph {
    graph: DiGraph<BasicBlock, EdgeKind, u32>,
    /// Block index of every instruction, indexed by [`InstrId::index`] (`NONE` if the id
    /// is not in the body).
    block_of: Vec<u32>,
    falls_off_end: Option<BlockId>,
}

impl ControlFlowGraph {
    /// Builds the graph of `body`.
    ///
    /// # Errors
    ///
    /// [`Error::BadBranchTarget`] if a branch, switch or leave names an id that is not in
    /// the body, [`Error::MalformedInstruction`] if an operand does not match its
    /// branching opcode, [`Error::BadEhClause`] if an exception clause's regions are not
    /// ranges of the body's instructions. Anything else (stack errors, code that falls off
    /// the end) is left to the stack analysis; see [`ControlFlowGraph::falls_off_end`].
    pub fn build(body: &MethodBody) -> Result<ControlFlowGraph> {
        let mut layout = Layout::default();
        layout.build(body)?;
        let n = layout.len();

        // Leaders, as a flag per position (plus one past the end).
        let mut leader = vec![false; n as usize + 1];
        if n > 0 {
            leader[0] = true;
        }
        for (p, &id) in layout.order.iter().enumerate() {
            let flow = body.instrs.opcode(id).flow();
            if flow.falls_through() && !matches!(flow, Flow::CondBranch | Flow::Switch) {
                // No explicit target (only branches, leaves and switches have one).
                continue;
            }
            let operand = body.instrs.get(id).operand;
            for_each_target(body, &layout, p as u32, operand, flow, |_, t| {
                leader[t as usize] = true;
            })?;
            leader[p + 1] = true;
        }
        for c in &layout.clauses {
            for p in [
                c.try_start,
                c.try_last + 1,
                c.handler_start,
                c.handler_last + 1,
            ] {
                leader[p as usize] = true;
            }
            if c.filter_start != NONE {
                leader[c.filter_start as usize] = true;
            }
        }

        // Blocks.
        // Sized up front: a block has at most two edges unless it ends in a switch or
        // lies in a try region, so most graphs never grow.
        let blocks = leader[..n as usize].iter().filter(|&&l| l).count();
        let mut graph = DiGraph::<BasicBlock, EdgeKind, u32>::with_capacity(blocks, 2 * blocks);
        let mut block_at = vec![0u32; n as usize];
        let mut start = 0u32;
        for p in 0..n {
            if p > start && leader[p as usize] {
                add_block(&mut graph, &layout, start, p);
                start = p;
            }
            block_at[p as usize] = graph.node_count() as u32;
        }
        if n > 0 {
            add_block(&mut graph, &layout, start, n);
        }

        // Edges.
        let mut falls_off_end = None;
        let mut targets = Vec::new();
        for b in 0..graph.node_count() {
            let block = graph[NodeIndex::new(b)];
            let Some(last) = layout.pos(block.last) else {
                continue;
            };
            let instr = body.instrs.get(block.last);
            let flow = instr.opcode.flow();
            let from = BlockId::new(b);
            for_each_target(body, &layout, last, instr.operand, flow, |case, t| {
                let kind = match flow {
                    Flow::Switch => EdgeKind::Switch { case },
                    Flow::Leave => EdgeKind::Leave,
                    _ => EdgeKind::Branch,
                };
                targets.push((block_at[t as usize], kind));
            })?;
            if flow.falls_through() {
                if last + 1 < n {
                    targets.push((block_at[last as usize + 1], EdgeKind::Fallthrough));
                } else {
                    falls_off_end = Some(from);
                }
            }
            for (to, kind) in targets.drain(..) {
                graph.add_edge(from.node(), NodeIndex::new(to as usize), kind);
            }
        }
        for (index, c) in layout.clauses.iter().enumerate() {
            let kind = EdgeKind::Exception {
                clause: index as u32,
            };
            let handler = NodeIndex::new(block_at[c.handler_start as usize] as usize);
            let filter = (c.filter_start != NONE)
                .then(|| NodeIndex::new(block_at[c.filter_start as usize] as usize));
            for b in block_at[c.try_start as usize]..=block_at[c.try_last as usize] {
                let from = NodeIndex::new(b as usize);
                if let Some(filter) = filter {
                    graph.add_edge(from, filter, kind);
                }
                graph.add_edge(from, handler, kind);
            }
        }

        let mut block_of = vec![NONE; layout.pos_of.len()];
        for (p, &id) in layout.order.iter().enumerate() {
            block_of[id.index()] = block_at[p];
        }
        Ok(ControlFlowGraph {
            graph,
            block_of,
            falls_off_end,
        })
    }

    /// The petgraph graph, for its algorithms: nodes are blocks (the node of block `b` is
    /// [`BlockId::node`], and [`BlockId::from_node`] converts back), edges carry their
    /// kind. For example the dominators of every block:
    ///
    /// ```
    /// use ilrewrite::MethodBody;
    /// use ilrewrite::analysis::{BlockId, ControlFlowGraph};
    /// use petgraph::algo::dominators::simple_fast;
    ///
    /// // ldarg.0; brfalse.s +2; ldc.i4.1; ret; ldc.i4.2; ret
    /// let body = MethodBody::decode(&[0x1E, 0x02, 0x2C, 0x02, 0x17, 0x2A, 0x18, 0x2A])?;
    /// let cfg = ControlFlowGraph::build(&body)?;
    /// let entry = cfg.entry().expect("not empty");
    /// let dominators = simple_fast(cfg.graph(), entry.node());
    /// for (b, _) in cfg.blocks() {
    ///     let idom = dominators.immediate_dominator(b.node()).map(BlockId::from_node);
    ///     assert_eq!(idom, (b != entry).then_some(entry));
    /// }
    /// # Ok::<(), ilrewrite::Error>(())
    /// ```
    #[inline]
    pub fn graph(&self) -> &DiGraph<BasicBlock, EdgeKind, u32> {
        &self.graph
    }

    /// Number of blocks.
    #[inline]
    pub fn block_count(&self) -> usize {
        self.graph.node_count()
    }

    /// The entry block (holding the first instruction); `None` for an empty body.
    #[inline]
    pub fn entry(&self) -> Option<BlockId> {
        (self.graph.node_count() > 0).then_some(BlockId(0))
    }

    /// The block `b`, if it exists.
    #[inline]
    pub fn block(&self, b: BlockId) -> Option<&BasicBlock> {
        self.graph.node_weight(b.node())
    }

    /// Every block with its id, in code order.
    pub fn blocks(&self) -> impl Iterator<Item = (BlockId, &BasicBlock)> + '_ {
        self.graph
            .node_indices()
            .map(move |n| (BlockId::from_node(n), &self.graph[n]))
    }

    /// The block holding instruction `id`; `None` if `id` is not in the body.
    #[inline]
    pub fn block_of(&self, id: InstrId) -> Option<BlockId> {
        match self.block_of.get(id.index()) {
            Some(&b) if b != NONE => Some(BlockId(b)),
            _ => None,
        }
    }

    /// The successors of `b` with the kind of each edge (an exceptional edge to a filter
    /// and one to its handler are both listed). Empty for ids not in the graph.
    pub fn successors(&self, b: BlockId) -> impl Iterator<Item = (BlockId, EdgeKind)> + '_ {
        let valid = b.index() < self.graph.node_count();
        valid
            .then(|| {
                self.graph
                    .edges_directed(b.node(), Direction::Outgoing)
                    .map(|e| (BlockId::from_node(e.target()), *e.weight()))
            })
            .into_iter()
            .flatten()
    }

    /// The predecessors of `b` with the kind of each edge. Empty for ids not in the graph.
    pub fn predecessors(&self, b: BlockId) -> impl Iterator<Item = (BlockId, EdgeKind)> + '_ {
        let valid = b.index() < self.graph.node_count();
        valid
            .then(|| {
                self.graph
                    .edges_directed(b.node(), Direction::Incoming)
                    .map(|e| (BlockId::from_node(e.source()), *e.weight()))
            })
            .into_iter()
            .flatten()
    }

    /// The block whose last instruction lets control fall past the end of the code, if
    /// any (invalid IL when that block is reachable).
    #[inline]
    pub fn falls_off_end(&self) -> Option<BlockId> {
        self.falls_off_end
    }

    /// Which blocks are reachable from the entry, following every edge kind; indexed by
    /// [`BlockId::index`]. This is the code the JIT imports and the stack analysis
    /// verifies.
    pub fn reachable(&self) -> Vec<bool> {
        let mut seen = vec![false; self.graph.node_count()];
        let mut stack = Vec::new();
        if let Some(entry) = self.entry() {
            seen[entry.index()] = true;
            stack.push(entry);
        }
        while let Some(b) = stack.pop() {
            for succ in self.graph.neighbors_directed(b.node(), Direction::Outgoing) {
                if !seen[succ.index()] {
                    seen[succ.index()] = true;
                    stack.push(BlockId::from_node(succ));
                }
            }
        }
        seen
    }
}

fn add_block(
    graph: &mut DiGraph<BasicBlock, EdgeKind, u32>,
    layout: &Layout,
    start: u32,
    end: u32,
) {
    graph.add_node(BasicBlock {
        first: layout.order[start as usize],
        last: layout.order[end as usize - 1],
        len: end - start,
    });
}

/// Calls `f(case, target_position)` for every explicit target of the instruction at `p`
/// (branch, leave, or each switch case).
fn for_each_target(
    body: &MethodBody,
    layout: &Layout,
    p: u32,
    operand: Operand,
    flow: Flow,
    mut f: impl FnMut(u32, u32),
) -> Result<()> {
    let site = || layout.site(body, p);
    let mut visit = |case: u32, target: InstrId| match layout.pos(target) {
        Some(t) => {
            f(case, t);
            Ok(())
        }
        None => Err(Error::BadBranchTarget { at: site(), target }),
    };
    match flow {
        Flow::Branch | Flow::CondBranch | Flow::Leave => match operand {
            Operand::Target(t) => visit(0, t),
            _ => Err(Error::MalformedInstruction {
                at: site(),
                what: "branch without a target operand",
            }),
        },
        Flow::Switch => {
            let targets = match operand {
                Operand::Switch(t) => body.instrs.try_switch_targets(t),
                _ => None,
            };
            let Some(targets) = targets else {
                return Err(Error::MalformedInstruction {
                    at: site(),
                    what: "switch without a target table of this body",
                });
            };
            for (case, &t) in targets.iter().enumerate() {
                visit(case as u32, t)?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}
