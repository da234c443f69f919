//! The instruction arena: nodes addressed by stable [`InstrId`]s, ordered by links.
//!
//! Inserting and unlinking are O(1) and never invalidate an id. Unlinked nodes stay in the
//! arena (so stale ids are detectable) until the list is cleared: [`InstrList::clear`] —
//! and therefore decoding into a reused body — starts ids from 0 again, so ids from before
//! name other instructions afterwards.

use super::instr::{InstrId, Instruction, Operand, SwitchTargets};
use super::packed::{Slot, instruction, operand_bits};
use crate::opcode::{OpCode, OperandKind};
use std::fmt;

pub(crate) const NIL: u32 = u32::MAX;
/// The `prev` link of a node that is not in the list. Like `NIL`, never a valid id.
const UNLINKED: u32 = u32::MAX - 1;

/// The links of an arena slot. `prev` is `UNLINKED` for nodes removed from the list.
#[derive(Debug, Clone, Copy)]
struct Links {
    prev: u32,
    next: u32,
}

impl Links {
    #[inline(always)]
    fn linked(self) -> bool {
        self.prev != UNLINKED
    }
}

/// An ordered list of instructions in an arena.
///
/// Instructions are stored as an opcode and the bits of their operand (the little-endian
/// value of its encoded bytes; the target's id for branches): [`InstrList::get`] rebuilds an [`Instruction`] by value and
/// [`InstrList::set`] stores one, so the list always knows what changed. The codec moves
/// operand bits without branching on the operand's kind.
///
/// Storage is flat until the first edit: while the list order is the arena order (a
/// decoded list, or one only appended to), instructions sit in one vector and no links
/// exist (neighbours are `id - 1` and `id + 1`). The first edit that links elsewhere or
/// unlinks materialises a `prev`/`next` pair per node; from then on the links decide the
/// order. Ids are arena indexes in both states.
#[derive(Debug, Clone)]
pub struct InstrList {
    /// The instructions in their stored form (see [`super::packed`]).
    slots: Vec<Slot>,
    /// Instructions whose operand has no stored form, named by the `bits` of their slot.
    odd: Vec<Instruction>,
    /// One entry per arena slot once materialised (`!flat`); empty while `flat`.
    links: Vec<Links>,
    head: u32,
    tail: u32,
    len: u32,
    switch_pool: Vec<InstrId>,
    /// The stamp of the decode that produced the list, while the list is exactly as that
    /// decode left it (no instruction stored, linked, unlinked or retargeted since, and
    /// the switch pool not handed out for writing); 0 otherwise. While non-zero, the code
    /// is the decoded code byte for byte; the stamp ties it to the body that holds that
    /// code, since a list can be moved into another body.
    pristine: u64,
    /// Whether the order is the arena order (ids `0..n`, all linked) and `links` unused:
    /// true for decoded lists and lists only ever appended to, false after any edit that
    /// links elsewhere or unlinks. Lets whole-list passes walk the arena as a slice.
    flat: bool,
}

/// The empty list (the same as [`InstrList::new`]; a derived `Default` would link the
/// first instruction to itself).
impl Default for InstrList {
    fn default() -> Self {
        Self::new()
    }
}

impl InstrList {
    /// An empty list.
    pub fn new() -> Self {
        InstrList {
            slots: Vec::new(),
            odd: Vec::new(),
            links: Vec::new(),
            head: NIL,
            tail: NIL,
            len: 0,
            switch_pool: Vec::new(),
            pristine: 0,
            flat: true,
        }
    }

    /// Removes every instruction, keeping allocated capacity; all ids become invalid.
    pub fn clear(&mut self) {
        self.slots.clear();
        self.odd.clear();
        self.links.clear();
        self.switch_pool.clear();
        self.head = NIL;
        self.tail = NIL;
        self.len = 0;
        self.pristine = 0;
        self.flat = true;
    }

    /// Whether the list is exactly as a successful decode left it: no instruction has been
    /// stored, linked, unlinked or retargeted since, and the switch-target pool has not
    /// been handed out for writing. The encoder then copies the decoded code.
    #[inline]
    pub fn is_unedited(&self) -> bool {
        self.pristine != 0
    }

    /// The stamp of the decode the list is unedited from, 0 if edited.
    #[inline]
    pub(crate) fn unedited_stamp(&self) -> u64 {
        self.pristine
    }

    /// Marks the list as exactly the code of the decode with (non-zero) `stamp`, the
    /// decoder's last step.
    pub(crate) fn mark_unedited(&mut self, stamp: u64) {
        self.pristine = stamp;
    }

    /// Reserves room for `n` more instructions.
    pub fn reserve(&mut self, n: usize) {
        self.slots.reserve(n);
        if !self.flat {
            self.links.reserve(n);
        }
    }

    /// Number of instructions in the list.
    #[inline]
    pub fn len(&self) -> usize {
        if self.flat {
            self.slots.len()
        } else {
            self.len as usize
        }
    }

    /// Whether the list has no instructions.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Size of the arena: every id ever handed out has `index() < arena_len()`.
    #[inline]
    pub fn arena_len(&self) -> usize {
        self.slots.len()
    }

    /// Whether `id` names an instruction currently in the list.
    #[inline]
    pub fn contains(&self, id: InstrId) -> bool {
        if self.flat {
            id.index() < self.slots.len()
        } else {
            self.links.get(id.index()).is_some_and(|l| l.linked())
        }
    }

    /// The first instruction.
    #[inline]
    pub fn first(&self) -> Option<InstrId> {
        if self.flat {
            (!self.slots.is_empty()).then_some(InstrId(0))
        } else {
            wrap(self.head)
        }
    }

    /// The last instruction.
    #[inline]
    pub fn last(&self) -> Option<InstrId> {
        if self.flat {
            self.slots.len().checked_sub(1).map(|i| InstrId(i as u32))
        } else {
            wrap(self.tail)
        }
    }

    /// The instruction after `id`. Panics if `id` was never handed out by this list
    /// (like slice indexing; ids are not input data).
    #[inline]
    pub fn next(&self, id: InstrId) -> Option<InstrId> {
        wrap(self.next_raw(id.0))
    }

    /// The instruction before `id`. Panics if `id` was never handed out by this list.
    #[inline]
    pub fn prev(&self, id: InstrId) -> Option<InstrId> {
        if self.flat {
            assert!(
                id.index() < self.slots.len(),
                "id {id:?} is not of this list"
            );
            id.0.checked_sub(1).map(InstrId)
        } else {
            wrap(self.links[id.index()].prev)
        }
    }

    /// The raw `next` link of arena slot `id` (`NIL` at the end). Panics on an id that
    /// was never handed out.
    #[inline(always)]
    fn next_raw(&self, id: u32) -> u32 {
        if self.flat {
            let n = self.slots.len();
            assert!((id as usize) < n, "id i{id} is not of this list");
            if id as usize + 1 < n { id + 1 } else { NIL }
        } else {
            self.links[id as usize].next
        }
    }

    /// The instruction named by `id`. Panics if `id` was never handed out by this list.
    #[inline]
    pub fn get(&self, id: InstrId) -> Instruction {
        self.unpack(self.slots[id.index()])
    }

    /// The opcode of the instruction named by `id` (cheaper than [`InstrList::get`]).
    /// Panics if `id` was never handed out by this list.
    #[inline]
    pub fn opcode(&self, id: InstrId) -> OpCode {
        self.slots[id.index()].opcode
    }

    /// The stored form of the instruction named by `id` (for passes that read operand
    /// bits directly). Panics if `id` was never handed out by this list.
    #[inline]
    pub(crate) fn slot(&self, id: InstrId) -> Slot {
        self.slots[id.index()]
    }

    /// The metadata token operand of the instruction named by `id`, if it has one (cheaper
    /// than [`InstrList::get`]). Panics if `id` was never handed out by this list.
    #[inline]
    pub fn token(&self, id: InstrId) -> Option<u32> {
        let slot = self.slots[id.index()];
        if slot.odd {
            match self.odd[slot.bits as usize].operand {
                Operand::Token(token) => Some(token),
                _ => None,
            }
        } else {
            slot.opcode.operand().is_token().then_some(slot.bits as u32)
        }
    }

    /// Replaces the instruction named by `id`, keeping its place in the order. Panics if
    /// `id` was never handed out by this list. This bypasses the checks of
    /// [`crate::MethodBody`]'s editing API (prefer [`crate::MethodBody::replace`]); the
    /// encoder still rejects targets that are not instructions of the body.
    #[inline]
    pub fn set(&mut self, id: InstrId, instr: Instruction) {
        self.pristine = 0;
        let slot = self.pack(instr);
        self.slots[id.index()] = slot;
    }

    /// The stored form of `instr`; odd instructions go to the side table.
    #[inline]
    fn pack(&mut self, instr: Instruction) -> Slot {
        match operand_bits(&instr) {
            Some(bits) => Slot::new(instr.opcode, bits),
            None => {
                self.odd.push(instr);
                Slot {
                    opcode: instr.opcode,
                    odd: true,
                    bits: (self.odd.len() - 1) as u64,
                }
            }
        }
    }

    /// The instruction a slot of this list holds.
    #[inline]
    pub(crate) fn unpack(&self, slot: Slot) -> Instruction {
        if slot.odd {
            self.odd[slot.bits as usize]
        } else {
            instruction(slot.opcode, slot.bits)
        }
    }

    /// Iterates over ids in order.
    pub fn ids(&self) -> Ids<'_> {
        Ids {
            list: self,
            cur: match self.flat {
                true if !self.slots.is_empty() => 0,
                true => NIL,
                false => self.head,
            },
        }
    }

    /// Iterates over `(id, instruction)` in order.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            list: self,
            state: match self.flat {
                true => IterState::Flat(self.slots.iter().enumerate()),
                false => IterState::Linked(self.ids()),
            },
        }
    }

    /// Iterates over `(id, opcode)` in order (cheaper than [`InstrList::iter`] when the
    /// operands are not needed).
    pub fn opcodes(&self) -> impl Iterator<Item = (InstrId, OpCode)> + '_ {
        self.slots_in_order().map(|(id, slot)| (id, slot.opcode))
    }

    /// Iterates over `(id, slot)` in order (for the encoder): in linked storage, link by
    /// link without asking at each step whether the storage is flat.
    pub(crate) fn slots_in_order(&self) -> impl Iterator<Item = (InstrId, Slot)> + '_ {
        let flat = self.flat.then(|| {
            self.slots
                .iter()
                .enumerate()
                .map(|(i, slot)| (InstrId(i as u32), *slot))
        });
        let mut cur = if self.flat { NIL } else { self.head };
        let linked = std::iter::from_fn(move || {
            let id = wrap(cur)?;
            let link = self.links.get(id.index())?;
            cur = link.next;
            Some((id, *self.slots.get(id.index())?))
        });
        flat.into_iter().flatten().chain(linked)
    }

    /// Calls `f` with the id and stored form of every instruction, in order: a slice walk
    /// in flat storage, a tight link walk otherwise (for whole-body passes).
    #[inline(always)]
    pub(crate) fn for_each_slot_in_order(&self, mut f: impl FnMut(u32, &Slot)) {
        if self.flat {
            for (id, slot) in self.slots.iter().enumerate() {
                f(id as u32, slot);
            }
        } else {
            let mut cur = self.head;
            while let (Some(slot), Some(link)) =
                (self.slots.get(cur as usize), self.links.get(cur as usize))
            {
                f(cur, slot);
                cur = link.next;
            }
        }
    }

    /// Clears the list and lets `f` append instructions in order through an [`InOrder`]
    /// (ids `0..n`), with room reserved for `capacity` of them.
    ///
    /// The decoder's bulk path: instructions are appended to flat storage directly.
    /// Whatever `f` returns, the list is consistent afterwards.
    pub(crate) fn append_in_order<R>(
        &mut self,
        capacity: usize,
        f: impl FnOnce(&mut InOrder<'_>) -> R,
    ) -> R {
        self.clear();
        self.slots.reserve(capacity);
        f(&mut InOrder {
            slots: &mut self.slots,
            pool: &mut self.switch_pool,
        })
    }

    /// Appends an instruction at the end.
    pub(crate) fn push_raw(&mut self, instr: Instruction) -> InstrId {
        let slot = self.pack(instr);
        InstrId(self.append_slot(slot))
    }

    /// Appends a stored instruction at the end (linking it when the storage is linked)
    /// and returns its id.
    #[inline(always)]
    fn append_slot(&mut self, slot: Slot) -> u32 {
        self.pristine = 0;
        let id = self.slots.len() as u32;
        self.slots.push(slot);
        if !self.flat {
            self.links.push(Links {
                prev: self.tail,
                next: NIL,
            });
            if self.tail == NIL {
                self.head = id;
            } else {
                self.links[self.tail as usize].next = id;
            }
            self.tail = id;
            self.len += 1;
        }
        id
    }

    /// Appends an instruction at the end.
    pub fn push_back(&mut self, instr: Instruction) -> InstrId {
        self.push_raw(instr)
    }

    /// Leaves flat storage: gives every slot its links (the arena order), so that the
    /// caller can link elsewhere or unlink. Does nothing once linked.
    #[inline]
    fn materialise_links(&mut self) {
        // Every edit of the order comes here first.
        self.pristine = 0;
        if self.flat {
            self.build_links();
        }
    }

    #[inline(never)]
    fn build_links(&mut self) {
        let n = self.slots.len() as u32;
        self.links.clear();
        // Branch-free, so it vectorises; the last `next` is fixed below.
        self.links.extend((0..n).map(|i| Links {
            prev: i.wrapping_sub(1), // NIL for the first
            next: i.wrapping_add(1),
        }));
        if let Some(last) = self.links.last_mut() {
            last.next = NIL;
        }
        self.head = if n == 0 { NIL } else { 0 };
        self.tail = n.wrapping_sub(1); // NIL when empty
        self.len = n;
        self.flat = false;
    }

    /// A new unlinked slot (links materialised).
    #[inline]
    fn alloc(&mut self, instr: Instruction) -> u32 {
        self.materialise_links();
        let id = self.slots.len() as u32;
        let slot = self.pack(instr);
        self.slots.push(slot);
        self.links.push(Links {
            prev: NIL,
            next: NIL,
        });
        self.len += 1;
        id
    }

    /// Links a new instruction right before `at` (which must be linked); nothing that
    /// refers to `at` changes. Crate-internal: users edit through [`crate::MethodBody`],
    /// which checks ids and keeps branches and regions consistent.
    pub(crate) fn link_before(&mut self, at: InstrId, instr: Instruction) -> InstrId {
        let new = self.alloc(instr);
        let prev = self.links[at.index()].prev;
        self.links[new as usize] = Links { prev, next: at.0 };
        self.links[at.index()].prev = new;
        if prev == NIL {
            self.head = new;
        } else {
            self.links[prev as usize].next = new;
        }
        InstrId(new)
    }

    /// Links new instructions, in order, right before `at` (which must be linked) and
    /// returns their ids, which are consecutive: `ids.start` is the first. Nothing that
    /// refers to `at` changes. One growth of each arena vector and one splice, rather
    /// than a [`InstrList::link_before`] per instruction.
    pub(crate) fn link_all_before(
        &mut self,
        at: InstrId,
        instrs: &[Instruction],
    ) -> std::ops::Range<u32> {
        let first = self.slots.len() as u32;
        let Some(k) = u32::try_from(instrs.len()).ok().filter(|&k| k > 0) else {
            return first..first;
        };
        self.materialise_links();
        let last = first + k - 1;
        let prev = self.links[at.index()].prev;
        self.slots.reserve(instrs.len());
        for &instr in instrs {
            let slot = self.pack(instr);
            self.slots.push(slot);
        }
        // Chained among themselves; the ends are fixed below.
        self.links.extend((first..=last).map(|id| Links {
            prev: id.wrapping_sub(1),
            next: id + 1,
        }));
        self.links[first as usize].prev = prev;
        self.links[last as usize].next = at.0;
        self.links[at.index()].prev = last;
        if prev == NIL {
            self.head = first;
        } else {
            self.links[prev as usize].next = first;
        }
        self.len += k;
        first..last + 1
    }

    /// Appends instructions in their stored form, in order, as a [`InstrList::push_back`]
    /// of the instructions they store would; returns the range of their ids. No slot may
    /// be odd (checked).
    pub(crate) fn push_slots(
        &mut self,
        slots: impl IntoIterator<Item = Slot>,
    ) -> std::ops::Range<u32> {
        let first = self.slots.len() as u32;
        slots.into_iter().for_each(|slot| {
            assert!(!slot.odd, "odd slots name the side table");
            self.append_slot(slot);
        });
        first..self.slots.len() as u32
    }

    /// Replaces the instruction named by `id` with a stored one, keeping its place in the
    /// order, as [`InstrList::set`] of the instruction it stores would. The slot may not
    /// be odd (checked). Panics if `id` was never handed out by this list.
    #[inline]
    pub(crate) fn set_slot(&mut self, id: InstrId, slot: Slot) {
        assert!(!slot.odd, "odd slots name the side table");
        self.pristine = 0;
        self.slots[id.index()] = slot;
    }

    /// In flat storage, an appender of stored instructions with room reserved for
    /// `additional` of them (see [`FlatAppend`]); `None` in linked storage.
    #[inline(always)]
    pub(crate) fn flat_append(&mut self, additional: usize) -> Option<FlatAppend<'_>> {
        if !self.flat {
            return None;
        }
        self.pristine = 0;
        self.slots.reserve(additional);
        Some(FlatAppend {
            slots: &mut self.slots,
        })
    }

    /// [`InstrList::push_slots`] of a slice: in flat storage, a store per slot without
    /// a storage test each (reserve room first for several of these).
    #[inline(always)]
    pub(crate) fn push_stored(&mut self, slots: &[Slot]) -> std::ops::Range<u32> {
        if !self.flat {
            return self.push_slots(slots.iter().copied());
        }
        self.pristine = 0;
        let first = self.slots.len() as u32;
        for slot in slots {
            assert!(!slot.odd, "odd slots name the side table");
            // Built anew rather than copied: a copy moves the padding too, piece by piece.
            self.slots.push(Slot::new(slot.opcode, slot.bits));
        }
        first..self.slots.len() as u32
    }

    /// [`InstrList::push_stored`] of `n` copies of `slot`.
    #[inline(always)]
    pub(crate) fn push_stored_copies(&mut self, slot: Slot, n: usize) -> std::ops::Range<u32> {
        if !self.flat {
            return self.push_slots(std::iter::repeat_n(slot, n));
        }
        assert!(!slot.odd, "odd slots name the side table");
        self.pristine = 0;
        let first = self.slots.len() as u32;
        for _ in 0..n {
            self.slots.push(slot);
        }
        first..self.slots.len() as u32
    }

    /// Appends `instrs` in order, as a [`InstrList::push_back`] of each would; returns
    /// the range of their ids.
    pub(crate) fn push_all(
        &mut self,
        instrs: impl IntoIterator<Item = Instruction>,
    ) -> std::ops::Range<u32> {
        let first = self.slots.len() as u32;
        if self.flat {
            // One pass of internal iteration (cheap over chained iterators).
            instrs.into_iter().for_each(|instr| {
                self.pristine = 0;
                let slot = self.pack(instr);
                self.slots.push(slot);
            });
        } else {
            instrs.into_iter().for_each(|instr| {
                self.push_raw(instr);
            });
        }
        first..self.slots.len() as u32
    }

    /// Starts setting the order to the ids of runs given to [`Order::run`], run after
    /// run, each run in increasing order; [`Order::finish`] ends it. The runs must be
    /// disjoint ranges that together cover the arena (checked by `finish`: their lengths
    /// must add up to it). Ids and instructions do not change: this is what a series of
    /// insertions reaching that order does, in one pass over the arena whatever the
    /// storage was. Crate-internal, like [`InstrList::link_before`].
    #[inline(always)]
    pub(crate) fn order(&mut self) -> Order<'_> {
        self.pristine = 0;
        // The arena order, then each run joined to the one before it.
        self.build_links();
        Order {
            list: self,
            head: NIL,
            tail: NIL,
            covered: 0,
        }
    }

    /// Links a new instruction right after `at` (which must be linked); nothing that
    /// refers to `at` changes. Crate-internal, like [`InstrList::link_before`].
    pub(crate) fn link_after(&mut self, at: InstrId, instr: Instruction) -> InstrId {
        let new = self.alloc(instr);
        let next = self.links[at.index()].next;
        self.links[new as usize] = Links { prev: at.0, next };
        self.links[at.index()].next = new;
        if next == NIL {
            self.tail = new;
        } else {
            self.links[next as usize].prev = new;
        }
        InstrId(new)
    }

    /// Unlinks `id` from the order; does nothing if it is not linked (or not an id of this
    /// list). References to it are the caller's business: prefer
    /// [`crate::MethodBody::remove`], which retargets them.
    pub fn unlink(&mut self, id: InstrId) {
        if !self.contains(id) {
            return;
        }
        self.materialise_links();
        let Links { prev, next } = self.links[id.index()];
        if prev == NIL {
            self.head = next;
        } else {
            self.links[prev as usize].next = next;
        }
        if next == NIL {
            self.tail = prev;
        } else {
            self.links[next as usize].prev = prev;
        }
        self.links[id.index()] = Links {
            prev: UNLINKED,
            next: NIL,
        };
        self.len -= 1;
    }

    /// Moves linked instruction `id` to the end of the order, keeping its id (and so its
    /// original offset). References to it are the caller's business, as for
    /// [`InstrList::unlink`]. Crate-internal, like [`InstrList::link_before`].
    pub(crate) fn move_to_back(&mut self, id: InstrId) {
        debug_assert!(self.contains(id), "moving an unlinked instruction");
        self.unlink(id);
        self.links[id.index()] = Links {
            prev: self.tail,
            next: NIL,
        };
        if self.tail == NIL {
            self.head = id.0;
        } else {
            self.links[self.tail as usize].next = id.0;
        }
        self.tail = id.0;
        self.len += 1;
    }

    /// Stores a new set of switch targets and returns its handle.
    pub fn new_switch_targets(&mut self, targets: &[InstrId]) -> SwitchTargets {
        self.pristine = 0;
        let start = self.switch_pool.len() as u32;
        self.switch_pool.extend_from_slice(targets);
        SwitchTargets {
            start,
            len: targets.len() as u32,
        }
    }

    /// The targets of a switch operand. Panics if the handle does not belong to this list's
    /// pool (see [`InstrList::try_switch_targets`]).
    #[inline]
    pub fn switch_targets(&self, targets: SwitchTargets) -> &[InstrId] {
        &self.switch_pool[targets.start as usize..(targets.start + targets.len) as usize]
    }

    /// The targets of a switch operand, or `None` if the handle does not belong to this
    /// list's pool. Never panics.
    #[inline]
    pub fn try_switch_targets(&self, targets: SwitchTargets) -> Option<&[InstrId]> {
        let start = targets.start as usize;
        let end = start.checked_add(targets.len as usize)?;
        self.switch_pool.get(start..end)
    }

    /// Mutable targets of a switch operand (shared by every instruction holding the handle:
    /// a copied `switch` instruction aliases the same targets). Panics if the handle does
    /// not belong to this list's pool.
    #[inline]
    pub fn switch_targets_mut(&mut self, targets: SwitchTargets) -> &mut [InstrId] {
        self.pristine = 0;
        &mut self.switch_pool[targets.start as usize..(targets.start + targets.len) as usize]
    }

    /// Like [`InstrList::switch_targets_mut`], or `None` for a handle of another list.
    #[inline]
    pub fn try_switch_targets_mut(&mut self, targets: SwitchTargets) -> Option<&mut [InstrId]> {
        self.pristine = 0;
        let start = targets.start as usize;
        let end = start.checked_add(targets.len as usize)?;
        self.switch_pool.get_mut(start..end)
    }

    /// Every stored instruction in list order as a slice, when the list order is the
    /// arena order (flat storage, see [`InstrList`]); `None` otherwise, then use
    /// [`InstrList::slots_in_order`].
    #[inline]
    pub(crate) fn as_flat_slice(&self) -> Option<&[Slot]> {
        self.flat.then_some(self.slots.as_slice())
    }

    /// Rewrites every branch and switch target of the instructions in the list through
    /// `map` (None keeps the target). Returns how many operands changed. One pass over
    /// the code, whatever the map does.
    pub(crate) fn retarget_operands(
        &mut self,
        mut map: impl FnMut(InstrId) -> Option<InstrId>,
    ) -> usize {
        self.pristine = 0;
        let mut changed = 0;
        let mut switches: smallvec::SmallVec<[SwitchTargets; 4]> = smallvec::SmallVec::new();
        let (flat, links) = (self.flat, &self.links);
        let odd = &mut self.odd;
        let linked = self
            .slots
            .iter_mut()
            .enumerate()
            .filter(move |(i, _)| flat || links[*i].linked());
        for (_, slot) in linked {
            let operand = if slot.odd {
                // Odd instructions keep their operand whole.
                match &mut odd[slot.bits as usize].operand {
                    Operand::Target(t) => {
                        if let Some(new) = map(*t) {
                            *t = new;
                            changed += 1;
                        }
                        continue;
                    }
                    Operand::Switch(s) => {
                        switches.push(*s);
                        continue;
                    }
                    _ => continue,
                }
            } else {
                slot.opcode.operand()
            };
            match operand {
                OperandKind::ShortBranch | OperandKind::Branch => {
                    if let Some(new) = map(InstrId(slot.bits as u32)) {
                        slot.bits = u64::from(new.0);
                        changed += 1;
                    }
                }
                OperandKind::Switch => switches.push(SwitchTargets {
                    start: slot.bits as u32,
                    len: (slot.bits >> 32) as u32,
                }),
                _ => {}
            }
        }
        for s in switches {
            // A handle of another list is left alone (the encoder rejects it).
            for target in self.try_switch_targets_mut(s).unwrap_or_default() {
                if let Some(new) = map(*target) {
                    *target = new;
                    changed += 1;
                }
            }
        }
        changed
    }
}

/// The order being set by [`InstrList::order`]: the links in arena order, each run
/// joined to the one before it. Until [`Order::finish`] the list's order is
/// inconsistent: always end it.
#[must_use = "the order is set by `finish`"]
pub(crate) struct Order<'a> {
    list: &'a mut InstrList,
    head: u32,
    tail: u32,
    covered: usize,
}

impl Order<'_> {
    /// Appends the ids of `run`, in increasing order, to the order (an empty run adds
    /// nothing).
    #[inline(always)]
    pub(crate) fn run(&mut self, run: std::ops::Range<u32>) {
        if run.is_empty() {
            return;
        }
        self.covered += run.len();
        let links = &mut self.list.links;
        links[run.start as usize].prev = self.tail;
        if self.tail == NIL {
            self.head = run.start;
        } else {
            links[self.tail as usize].next = run.start;
        }
        self.tail = run.end - 1;
    }

    /// Ends the order after the last run given. Panics if the runs do not cover the
    /// arena.
    #[inline(always)]
    pub(crate) fn finish(self) {
        let Order {
            list,
            head,
            tail,
            covered,
        } = self;
        assert_eq!(covered, list.slots.len(), "runs must cover the arena");
        if tail != NIL {
            list.links[tail as usize].next = NIL;
        }
        list.head = head;
        list.tail = tail;
    }
}

/// Appends stored instructions to a list in flat storage, as [`InstrList::push_slots`]
/// would, with a store per slot and nothing else (see [`InstrList::flat_append`]).
pub(crate) struct FlatAppend<'a> {
    slots: &'a mut Vec<Slot>,
}

impl FlatAppend<'_> {
    /// Appends `slot`, which may not be odd (checked).
    #[inline(always)]
    pub(crate) fn push(&mut self, slot: Slot) {
        assert!(!slot.odd, "odd slots name the side table");
        // Built anew rather than copied: a copy moves the padding too, piece by piece.
        self.slots.push(Slot::new(slot.opcode, slot.bits));
    }

    /// Appends `slots`, in order.
    #[inline(always)]
    pub(crate) fn extend(&mut self, slots: &[Slot]) {
        for &slot in slots {
            self.push(slot);
        }
    }
}

/// Appends to a list being built in order (see [`InstrList::append_in_order`]).
pub(crate) struct InOrder<'a> {
    /// The stored instructions, to be pushed in order (ids `0..n`); never odd.
    pub slots: &'a mut Vec<Slot>,
    /// The list's switch-target pool, to which switches being appended add their targets.
    pub pool: &'a mut Vec<InstrId>,
}

#[inline]
fn wrap(raw: u32) -> Option<InstrId> {
    // `UNLINKED` too: the `prev` of a removed node.
    (raw < UNLINKED).then_some(InstrId(raw))
}

/// Iterator over the ids of an [`InstrList`], in order.
pub struct Ids<'a> {
    list: &'a InstrList,
    cur: u32,
}

impl Iterator for Ids<'_> {
    type Item = InstrId;

    #[inline]
    fn next(&mut self) -> Option<InstrId> {
        let id = wrap(self.cur)?;
        self.cur = self.list.next_raw(id.0);
        Some(id)
    }
}

/// Shows the id the iterator yields next.
impl fmt::Debug for Ids<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ids")
            .field("next", &wrap(self.cur))
            .finish_non_exhaustive()
    }
}

/// Iterator over the `(id, instruction)` pairs of an [`InstrList`], in order.
pub struct Iter<'a> {
    list: &'a InstrList,
    state: IterState<'a>,
}

/// Flat storage is walked as a slice, linked storage link by link.
enum IterState<'a> {
    Flat(std::iter::Enumerate<std::slice::Iter<'a, Slot>>),
    Linked(Ids<'a>),
}

impl Iterator for Iter<'_> {
    type Item = (InstrId, Instruction);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let (id, slot) = match &mut self.state {
            IterState::Flat(slots) => {
                let (i, slot) = slots.next()?;
                (InstrId(i as u32), *slot)
            }
            IterState::Linked(ids) => {
                let id = ids.next()?;
                (id, self.list.slots[id.index()])
            }
        };
        Some((id, self.list.unpack(slot)))
    }
}

/// Shows the id the iterator yields next.
impl fmt::Debug for Iter<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let next = match &self.state {
            IterState::Flat(slots) => slots.clone().next().map(|(i, _)| InstrId(i as u32)),
            IterState::Linked(ids) => wrap(ids.cur),
        };
        f.debug_struct("Iter")
            .field("next", &next)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iterators_show_the_next_id() {
        let mut list = InstrList::new();
        let a = list.push_back(Instruction::simple(OpCode::Nop));
        list.push_back(Instruction::simple(OpCode::Ret));
        assert_eq!(format!("{:?}", list.ids()), "Ids { next: Some(i0), .. }");
        assert_eq!(format!("{:?}", list.iter()), "Iter { next: Some(i0), .. }");
        list.link_after(a, Instruction::simple(OpCode::Dup));
        let mut iter = list.iter();
        iter.next();
        assert_eq!(format!("{iter:?}"), "Iter { next: Some(i2), .. }");
        assert_eq!(
            format!("{:?}", InstrList::new().ids()),
            "Ids { next: None, .. }"
        );
    }

    #[test]
    fn default_list_is_empty_and_links_correctly() {
        let mut list = InstrList::default();
        assert_eq!(list.ids().count(), 0);
        assert_eq!(list.first(), None);
        let a = list.push_back(Instruction::simple(OpCode::Nop));
        assert_eq!(list.ids().collect::<Vec<_>>(), vec![a]);
        assert_eq!(list.prev(a), None);
        assert_eq!(list.next(a), None);
        let b = list.push_back(Instruction::simple(OpCode::Ret));
        assert_eq!(list.ids().collect::<Vec<_>>(), vec![a, b]);
        assert_eq!(list.prev(a), None);
        assert_eq!(list.prev(b), Some(a));
    }

    #[test]
    fn arena_order_walk_only_while_the_order_is_the_arena_order() {
        let in_order = |list: &InstrList| {
            list.as_flat_slice()
                .map(|s| (0..s.len() as u32).map(InstrId).collect::<Vec<_>>())
        };
        let mut list = InstrList::new();
        let a = list.push_back(Instruction::simple(OpCode::Nop));
        let b = list.push_back(Instruction::simple(OpCode::Ret));
        assert_eq!(in_order(&list), Some(vec![a, b]));
        let c = list.link_after(a, Instruction::simple(OpCode::Dup));
        assert_eq!(in_order(&list), None);
        assert_eq!(list.ids().collect::<Vec<_>>(), vec![a, c, b]);
        list.clear();
        let a = list.push_back(Instruction::simple(OpCode::Nop));
        list.push_back(Instruction::simple(OpCode::Ret));
        list.unlink(a);
        assert_eq!(in_order(&list), None);
    }

    /// The bulk appends do what a `push_back` per instruction does, in flat and in linked
    /// storage; `order` gives the order of its runs.
    #[test]
    fn bulk_appends_and_ordering_agree_with_single_edits() {
        let instrs = [
            Instruction::simple(OpCode::Nop),
            Instruction::with_token(OpCode::Call, 0x0A00_0001),
            Instruction::ldloc(300),
            Instruction::branch(OpCode::Leave, InstrId(1)),
        ];
        let slots: Vec<Slot> = instrs
            .iter()
            .map(|i| Slot::new(i.opcode, operand_bits(i).unwrap()))
            .collect();
        for linked in [false, true] {
            let start = || {
                let mut list = InstrList::new();
                let a = list.push_back(Instruction::simple(OpCode::Dup));
                list.push_back(Instruction::simple(OpCode::Ret));
                if linked {
                    list.link_after(a, Instruction::simple(OpCode::Pop));
                    list.unlink(a);
                }
                list
            };
            let mut one_by_one = start();
            for &i in &instrs {
                one_by_one.push_back(i);
            }
            let (mut all, mut stored, mut sliced) = (start(), start(), start());
            let n = all.arena_len() as u32;
            assert_eq!(all.push_all(instrs.iter().copied()), n..n + 4);
            assert_eq!(stored.push_slots(slots.iter().copied()), n..n + 4);
            assert_eq!(sliced.push_stored(&slots), n..n + 4);
            assert_eq!(format!("{all:?}"), format!("{one_by_one:?}"));
            assert_eq!(format!("{stored:?}"), format!("{one_by_one:?}"));
            assert_eq!(format!("{sliced:?}"), format!("{one_by_one:?}"));
            // Copies of one slot, none and several.
            let (mut copies, mut pushed) = (start(), start());
            for k in [0, 3] {
                let at = copies.arena_len() as u32;
                assert_eq!(copies.push_stored_copies(slots[2], k), at..at + k as u32);
                for _ in 0..k {
                    pushed.push_back(instrs[2]);
                }
            }
            assert_eq!(format!("{copies:?}"), format!("{pushed:?}"));
            // The flat appender: only in flat storage, and then as the pushes.
            let mut appended = start();
            match appended.flat_append(5) {
                Some(mut append) => {
                    assert!(!linked);
                    append.extend(&slots);
                    append.push(slots[2]);
                }
                None => {
                    assert!(linked);
                    continue;
                }
            }
            one_by_one.push_back(instrs[2]);
            assert_eq!(format!("{appended:?}"), format!("{one_by_one:?}"));
        }
        let mut list = InstrList::new();
        list.push_all(instrs.iter().copied());
        list.push_all(instrs.iter().copied());
        let mut order = list.order();
        for run in [6..8, 0..2, 2..2, 4..6, 2..4] {
            order.run(run);
        }
        order.finish();
        let order: Vec<u32> = list.ids().map(|id| id.0).collect();
        assert_eq!(order, [6, 7, 0, 1, 4, 5, 2, 3]);
        let back: Vec<u32> = {
            let mut v = Vec::new();
            let mut cur = list.last();
            while let Some(id) = cur {
                v.push(id.0);
                cur = list.prev(id);
            }
            v
        };
        assert_eq!(back, [3, 2, 5, 4, 1, 0, 7, 6]);
        assert_eq!(list.len(), 8);
        assert!(!list.is_unedited());
    }

    /// The cheap readers agree with the full one, in flat and in linked storage, for
    /// encodable and odd instructions.
    #[test]
    fn opcodes_and_token_agree_with_get() {
        let check = |list: &InstrList| {
            let full: Vec<_> = list.iter().collect();
            let cheap: Vec<_> = list.opcodes().collect();
            assert_eq!(full.len(), cheap.len());
            for ((id, instr), (cid, opcode)) in full.iter().zip(&cheap) {
                assert_eq!((id, instr.opcode), (cid, *opcode));
                let token = match instr.operand {
                    Operand::Token(t) => Some(t),
                    _ => None,
                };
                assert_eq!(list.token(*id), token, "{instr:?}");
                assert_eq!(list.opcode(*id), instr.opcode);
            }
        };
        let mut list = InstrList::new();
        let a = list.push_back(Instruction::new(OpCode::Call, Operand::Token(0x0A00_0007)));
        list.push_back(Instruction::new(OpCode::LdcI4S, Operand::Int(-5)));
        // Odd: a token on an opcode without one, and an out-of-range small operand.
        list.push_back(Instruction::new(
            OpCode::Ldarg0,
            Operand::Token(0x0600_0001),
        ));
        list.push_back(Instruction::new(OpCode::LdcI4S, Operand::Int(1000)));
        list.push_back(Instruction::simple(OpCode::Ret));
        assert!(list.as_flat_slice().is_some());
        check(&list);
        list.link_after(
            a,
            Instruction::new(OpCode::Ldstr, Operand::Token(0x7000_0001)),
        );
        list.unlink(a);
        assert!(list.as_flat_slice().is_none());
        check(&list);
    }
}
