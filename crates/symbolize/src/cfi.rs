//! A file's call frame information evaluated with gimli, register by
//! register: the offline unwinder's way past the frames framehop cannot
//! follow (see [`crate::unwind`]).
//!
//! framehop tracks three registers (instruction, stack and frame
//! pointers). A frame whose CFA is defined on any other register, or by an
//! expression that reads memory or another register, is beyond it: it then
//! falls back to frame-pointer unwinding, which in code built without
//! frame pointers ends the stack or goes astray. ld.so's lazy-binding
//! trampolines (`_dl_runtime_resolve_xsave`, `_xsavec`, `_fxsave`) are the
//! common case: they realign the stack and define their CFA on rbx. The
//! signal trampoline (`__restore_rt`) is another: its CFA is read from the
//! saved context. [`Cfi::hard`] lists such frames' address ranges;
//! [`Cfi::step`] unwinds one frame with every general register
//! (`DW_CFA_def_cfa` on any register, expressions with memory reads, and
//! the saved-register rules).

use std::sync::Arc;

use gimli::{
    BaseAddresses, CallFrameInstruction, CfaRule, DebugFrame, EhFrame, EndianSlice, Expression,
    LittleEndian, Location, Operation, Register, RegisterRule, UnwindContext, UnwindSection,
    X86_64,
};

type Slice<'a> = EndianSlice<'a, LittleEndian>;

/// The registers of one frame in DWARF's x86_64 numbering: 0-15 the
/// general registers (rax, rdx, rcx, rbx, rsi, rdi, rbp, rsp, r8-r15), 16
/// the instruction pointer (the return address column). None: unknown.
pub type Registers = [Option<u64>; 17];

/// The return address column (rip).
pub const RA: usize = 16;
/// The stack pointer.
pub const RSP: usize = 7;
/// The frame pointer.
pub const RBP: usize = 6;

/// The most operations an expression may execute (a branch may loop).
const MAX_OPERATIONS: u32 = 1000;

/// The unwind section of a file read by gimli: `.eh_frame` when there is
/// one (as framehop prefers), else `.debug_frame`.
#[derive(Default)]
pub struct Cfi {
    data: Option<Arc<[u8]>>,
    debug_frame: bool,
    bases: BaseAddresses,
    /// Every FDE: (start, end, offset in the section), by start.
    fdes: Vec<(u64, u64, usize)>,
    /// The link-time ranges of the FDEs with a rule framehop cannot
    /// evaluate, by start.
    pub hard: Vec<(u64, u64)>,
}

/// What one frame's unwinding gave.
#[derive(Debug, PartialEq)]
pub enum Step {
    /// The registers are now the caller's.
    Caller,
    /// The CFI says this frame has no caller (its return address is
    /// undefined: `_start`, a thread's start).
    End,
    /// No rule for this address (no FDE or no row).
    Unknown,
    /// A rule that could not be evaluated here (an unknown register,
    /// memory outside the saved stack), or that would loop or walk down
    /// the stack: the stack ends here.
    Failed,
}

/// Link-time addresses of the sections CFI pointers may be relative to.
#[derive(Clone, Copy, Default)]
pub struct SectionAddresses {
    pub eh_frame: u64,
    pub text: u64,
    pub got: u64,
}

impl Cfi {
    /// Indexes `.eh_frame` (`eh_frame`), else `.debug_frame`: every FDE's
    /// range, and which of them framehop cannot follow.
    pub fn new(
        eh_frame: Option<Arc<[u8]>>,
        debug_frame: Option<Arc<[u8]>>,
        addresses: SectionAddresses,
    ) -> Cfi {
        let bases = BaseAddresses::default()
            .set_eh_frame(addresses.eh_frame)
            .set_text(addresses.text)
            .set_got(addresses.got);
        let (data, debug) = match (eh_frame, debug_frame) {
            (Some(d), _) => (d, false),
            (None, Some(d)) => (d, true),
            (None, None) => return Cfi::default(),
        };
        let mut cfi = Cfi {
            data: Some(data.clone()),
            debug_frame: debug,
            bases,
            fdes: Vec::new(),
            hard: Vec::new(),
        };
        if debug {
            let mut section = DebugFrame::new(&data, LittleEndian);
            section.set_address_size(8);
            cfi.index(&section);
        } else {
            cfi.index(&EhFrame::new(&data, LittleEndian));
        }
        cfi.fdes.sort_unstable();
        cfi.hard.sort_unstable();
        cfi
    }

    fn index<'a, S: UnwindSection<Slice<'a>>>(&mut self, section: &S)
    where
        S::Offset: gimli::UnwindOffset<usize>,
    {
        let bases = self.bases.clone();
        let mut entries = section.entries(&bases);
        // Each CIE's verdict, by offset (a CIE serves many FDEs).
        let mut cie_hard: rustc_hash::FxHashMap<usize, bool> = Default::default();
        while let Ok(Some(entry)) = entries.next() {
            let gimli::CieOrFde::Fde(partial) = entry else {
                continue;
            };
            let Ok(fde) = partial.parse(S::cie_from_offset) else {
                continue;
            };
            let start = fde.initial_address();
            let end = start.saturating_add(fde.len());
            if fde.len() == 0 {
                continue;
            }
            let encoding = fde.cie().encoding();
            let cie = *cie_hard.entry(fde.cie().offset()).or_insert_with(|| {
                let mut instructions = fde.cie().instructions(section, &bases);
                hard_instructions(section, encoding, || instructions.next())
            });
            let mut instructions = fde.instructions(section, &bases);
            if cie || hard_instructions(section, encoding, || instructions.next()) {
                self.hard.push((start, end));
            }
            self.fdes.push((start, end, fde.offset()));
        }
    }

    /// The FDE covering link-time address `svma`: its section offset.
    fn fde_at(&self, svma: u64) -> Option<usize> {
        let i = self.fdes.partition_point(|&(start, _, _)| start <= svma);
        let &(_, end, offset) = self.fdes.get(i.checked_sub(1)?)?;
        (svma < end).then_some(offset)
    }

    /// Unwinds the frame at link-time address `svma` (the instruction
    /// pointer of the first frame, a return address minus one after)
    /// whose registers are `regs`, which become the caller's on
    /// [`Step::Caller`] (else they are left as they are); `read` reads 8
    /// bytes of the stack.
    pub fn step(
        &self,
        context: &mut UnwindContext<usize>,
        svma: u64,
        regs: &mut Registers,
        first_frame: bool,
        read: &mut dyn FnMut(u64) -> Option<u64>,
    ) -> Step {
        let Some(data) = self.data.as_deref() else {
            return Step::Unknown;
        };
        let Some(fde) = self.fde_at(svma) else {
            return Step::Unknown;
        };
        let mut next = *regs;
        let result = if self.debug_frame {
            let mut section = DebugFrame::new(data, LittleEndian);
            section.set_address_size(8);
            step_in(
                &section,
                &self.bases,
                fde.into(),
                context,
                svma,
                &mut next,
                read,
            )
        } else {
            let section = EhFrame::new(data, LittleEndian);
            step_in(
                &section,
                &self.bases,
                fde.into(),
                context,
                svma,
                &mut next,
                read,
            )
        };
        match result {
            Ok(Step::Caller) => {
                let (Some(sp), Some(cfa), Some(pc), Some(ra)) =
                    (regs[RSP], next[RSP], regs[RA], next[RA])
                else {
                    return Step::Failed;
                };
                // Never loop, never walk down the stack (as framehop).
                if (cfa == sp && ra == pc) || (!first_frame && cfa < sp) || ra == 0 {
                    return Step::Failed;
                }
                *regs = next;
                Step::Caller
            }
            Ok(step) => step,
            Err(step) => step,
        }
    }
}

/// [`Cfi::step`] in one section (`regs` turned into the caller's in
/// place): Err(Unknown) where the FDE has no row for `svma`, Err(Failed)
/// where a rule cannot be evaluated.
fn step_in<'a, S: UnwindSection<Slice<'a>>>(
    section: &S,
    bases: &BaseAddresses,
    offset: S::Offset,
    context: &mut UnwindContext<usize>,
    svma: u64,
    regs: &mut Registers,
    read: &mut dyn FnMut(u64) -> Option<u64>,
) -> Result<Step, Step> {
    let fde = section
        .fde_from_offset(bases, offset, S::cie_from_offset)
        .map_err(|_| Step::Unknown)?;
    let encoding = fde.cie().encoding();
    let row = fde
        .unwind_info_for_address(section, bases, context, svma)
        .map_err(|_| Step::Unknown)?;
    let cfa = cfa_of(section, row.cfa(), encoding, regs, read).ok_or(Step::Failed)?;
    registers_of(section, row, encoding, cfa, regs, read).ok_or(Step::Failed)
}

/// The CFA of a row.
fn cfa_of<'a, S: UnwindSection<Slice<'a>>>(
    section: &S,
    rule: &CfaRule<usize>,
    encoding: gimli::Encoding,
    regs: &Registers,
    read: &mut dyn FnMut(u64) -> Option<u64>,
) -> Option<u64> {
    Some(match rule {
        CfaRule::RegisterAndOffset { register, offset } => {
            get(regs, *register)?.checked_add_signed(*offset)?
        }
        CfaRule::Expression(e) => {
            let expression = e.get(section).ok()?;
            evaluate(expression, encoding, regs, None, read)?
        }
    })
}

/// The caller's registers by a row's rules, in place (None where the
/// return address cannot be had); [`Step::End`] where the row says there
/// is no caller.
fn registers_of<'a, S: UnwindSection<Slice<'a>>>(
    section: &S,
    row: &gimli::UnwindTableRow<usize>,
    encoding: gimli::Encoding,
    cfa: u64,
    regs_out: &mut Registers,
    read: &mut dyn FnMut(u64) -> Option<u64>,
) -> Option<Step> {
    let old = *regs_out;
    let regs = &old;
    let rule = |register: usize| row.register(Register(register as u16));
    let value = |rule: RegisterRule<usize>,
                 old: Option<u64>,
                 read: &mut dyn FnMut(u64) -> Option<u64>|
     -> Option<u64> {
        match rule {
            RegisterRule::Undefined | RegisterRule::Architectural => None,
            RegisterRule::SameValue => old,
            RegisterRule::Offset(o) => read(cfa.checked_add_signed(o)?),
            RegisterRule::ValOffset(o) => cfa.checked_add_signed(o),
            RegisterRule::Register(r) => get(regs, r),
            RegisterRule::Expression(e) => {
                let address = evaluate(e.get(section).ok()?, encoding, regs, Some(cfa), read)?;
                read(address)
            }
            RegisterRule::ValExpression(e) => {
                evaluate(e.get(section).ok()?, encoding, regs, Some(cfa), read)
            }
            RegisterRule::Constant(c) => Some(c),
        }
    };
    let return_address = match rule(RA) {
        None | Some(RegisterRule::Undefined) => return Some(Step::End),
        Some(r) => value(r, regs[RA], read)?,
    };
    let next = regs_out;
    for (register, slot) in next.iter_mut().enumerate().take(16) {
        if register == RSP {
            continue;
        }
        // No rule: the register keeps its value (callee-saved registers
        // a function leaves alone; the others are what they are).
        if let Some(r) = rule(register) {
            *slot = value(r, regs[register], read);
        }
    }
    next[RSP] = Some(cfa);
    next[RA] = Some(return_address);
    Some(Step::Caller)
}

fn get(regs: &Registers, register: Register) -> Option<u64> {
    *regs.get(usize::from(register.0))?
}

/// Evaluates a CFI expression (`initial`: the CFA, pushed first for a
/// register's rule).
fn evaluate(
    expression: Expression<Slice<'_>>,
    encoding: gimli::Encoding,
    regs: &Registers,
    initial: Option<u64>,
    read: &mut dyn FnMut(u64) -> Option<u64>,
) -> Option<u64> {
    let mut evaluation = expression.evaluation(encoding);
    evaluation.set_max_iterations(MAX_OPERATIONS);
    if let Some(value) = initial {
        evaluation.set_initial_value(value);
    }
    let mut result = evaluation.evaluate().ok()?;
    loop {
        result = match result {
            gimli::EvaluationResult::Complete => break,
            gimli::EvaluationResult::RequiresRegister { register, .. } => {
                let value = get(regs, register)?;
                evaluation
                    .resume_with_register(gimli::Value::Generic(value))
                    .ok()?
            }
            gimli::EvaluationResult::RequiresMemory { address, size, .. } => {
                let word = read(address)?;
                let value = match size {
                    8 => word,
                    1..=7 => word & ((1u64 << (8 * u32::from(size))) - 1),
                    _ => return None,
                };
                evaluation
                    .resume_with_memory(gimli::Value::Generic(value))
                    .ok()?
            }
            _ => return None,
        };
    }
    match &evaluation.as_result().last()?.location {
        Location::Address { address } => Some(*address),
        Location::Value {
            value: gimli::Value::Generic(v),
        } => Some(*v),
        _ => None,
    }
}

/// Whether CFI instructions hold a rule framehop cannot evaluate: a CFA on
/// a register other than rsp and rbp, a CFA expression that reads memory
/// or another register, or an expression or register rule for rbp or the
/// return address (framehop evaluates those without the CFA, or not at
/// all). An instruction that does not parse counts as hard too.
fn hard_instructions<'a, S: UnwindSection<Slice<'a>>>(
    section: &S,
    encoding: gimli::Encoding,
    mut next: impl FnMut() -> gimli::Result<Option<CallFrameInstruction<usize>>>,
) -> bool {
    let tracked = |r: Register| r == X86_64::RSP || r == X86_64::RBP || r == X86_64::RA;
    loop {
        let instruction = match next() {
            Ok(Some(i)) => i,
            Ok(None) => return false,
            Err(_) => return true,
        };
        let hard = match instruction {
            CallFrameInstruction::DefCfa { register, .. }
            | CallFrameInstruction::DefCfaSf { register, .. }
            | CallFrameInstruction::DefCfaRegister { register } => {
                register != X86_64::RSP && register != X86_64::RBP
            }
            CallFrameInstruction::DefCfaExpression { expression } => expression
                .get(section)
                .map_or(true, |e| hard_expression(e, encoding, tracked)),
            CallFrameInstruction::Register {
                dest_register,
                src_register,
            } => {
                (dest_register == X86_64::RBP || dest_register == X86_64::RA)
                    && !tracked(src_register)
            }
            CallFrameInstruction::Expression { register, .. }
            | CallFrameInstruction::ValExpression { register, .. } => {
                register == X86_64::RBP || register == X86_64::RA
            }
            _ => false,
        };
        if hard {
            return true;
        }
    }
}

/// Whether a CFA expression reads memory or a register framehop does not
/// track (or does anything but arithmetic on rsp, rbp and rip: the PLT's
/// expression is of that kind).
fn hard_expression(
    expression: Expression<Slice<'_>>,
    encoding: gimli::Encoding,
    tracked: impl Fn(Register) -> bool,
) -> bool {
    let mut operations = expression.operations(encoding);
    loop {
        let op = match operations.next() {
            Ok(Some(op)) => op,
            Ok(None) => return false,
            Err(_) => return true,
        };
        let simple = match op {
            Operation::Register { register } | Operation::RegisterOffset { register, .. } => {
                tracked(register)
            }
            Operation::UnsignedConstant { .. }
            | Operation::SignedConstant { .. }
            | Operation::PlusConstant { .. }
            | Operation::Plus
            | Operation::Minus
            | Operation::Mul
            | Operation::And
            | Operation::Or
            | Operation::Xor
            | Operation::Shl
            | Operation::Shr
            | Operation::Shra
            | Operation::Ge
            | Operation::Gt
            | Operation::Le
            | Operation::Lt
            | Operation::Eq
            | Operation::Ne
            | Operation::Neg
            | Operation::Not
            | Operation::Abs
            | Operation::Drop
            | Operation::Swap
            | Operation::Rot
            | Operation::Pick { .. }
            | Operation::Nop => true,
            _ => false,
        };
        if !simple {
            return true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object::{Object, ObjectSection, ObjectSymbol};

    /// A function shaped like ld.so's lazy-binding trampoline: it saves
    /// rbx, keeps its entry stack pointer there, defines its CFA on rbx
    /// and realigns rsp; and a plain C function beside it.
    const SOURCE: &str = r#"
        .text
        .globl realign
        .type realign, @function
realign:
        .cfi_startproc
        push %rbx
        .cfi_adjust_cfa_offset 8
        .cfi_rel_offset %rbx, 0
        mov %rsp, %rbx
        .cfi_def_cfa_register %rbx
        and $-64, %rsp
        call plain
        mov %rbx, %rsp
        .cfi_def_cfa_register %rsp
        pop %rbx
        .cfi_adjust_cfa_offset -8
        .cfi_restore %rbx
        ret
        .cfi_endproc
        .size realign, .-realign

        .globl plain
        .type plain, @function
plain:
        .cfi_startproc
        sub $24, %rsp
        .cfi_adjust_cfa_offset 24
        add $24, %rsp
        .cfi_adjust_cfa_offset -24
        ret
        .cfi_endproc
        .size plain, .-plain
"#;

    /// The object's CFI and its functions' (start, size).
    fn build() -> (Cfi, (u64, u64), (u64, u64)) {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("realign.s");
        let output = dir.path().join("realign.so");
        std::fs::write(&source, SOURCE).unwrap();
        let status = std::process::Command::new("gcc")
            .args(["-shared", "-nostdlib", "-o"])
            .arg(&output)
            .arg(&source)
            .status()
            .expect("gcc runs");
        assert!(status.success());
        let bytes = std::fs::read(&output).unwrap();
        let elf = object::File::parse(&*bytes).unwrap();
        let function = |name: &str| {
            let s = elf.symbols().find(|s| s.name() == Ok(name)).unwrap();
            (s.address(), s.size())
        };
        let section = elf.section_by_name(".eh_frame").unwrap();
        let cfi = Cfi::new(
            Some(Arc::from(section.data().unwrap())),
            None,
            SectionAddresses {
                eh_frame: section.address(),
                ..SectionAddresses::default()
            },
        );
        (cfi, function("realign"), function("plain"))
    }

    #[test]
    fn a_cfa_on_rbx_is_hard_and_unwinds_with_every_register() {
        let (cfi, realign, plain) = build();
        // Only the trampoline-like function is beyond framehop.
        assert_eq!(cfi.hard, vec![(realign.0, realign.0 + realign.1)]);
        assert!(cfi.fde_at(plain.0).is_some());

        // Inside its body (after `push %rbx; mov %rsp,%rbx`: 4 bytes), the
        // stack realigned below the saved rbx.
        let entry_sp = 0x7000_1010u64;
        let mut regs: Registers = [None; 17];
        for (i, r) in regs.iter_mut().enumerate() {
            *r = Some(0x100 + i as u64);
        }
        regs[3] = Some(entry_sp - 8); // rbx: rsp after the push
        regs[RSP] = Some((entry_sp - 8) & !63);
        regs[RA] = Some(realign.0 + 4);
        let mut read = |address: u64| match address {
            a if a == entry_sp - 8 => Some(0xbbbb), // the caller's rbx
            a if a == entry_sp => Some(0x4242),     // the return address
            _ => None,
        };
        let mut context = UnwindContext::new();
        let mut caller = regs;
        let step = cfi.step(&mut context, realign.0 + 4, &mut caller, true, &mut read);
        assert_eq!(step, Step::Caller);
        assert_eq!(caller[RSP], Some(entry_sp + 8));
        assert_eq!(caller[RA], Some(0x4242));
        assert_eq!(caller[3], Some(0xbbbb));
        // Registers without a rule keep their values.
        assert_eq!(caller[12], Some(0x100 + 12));
        assert_eq!(caller[RBP], regs[RBP]);

        // At its first instruction the CFA is still on rsp.
        regs[RSP] = Some(entry_sp);
        regs[RA] = Some(realign.0);
        let mut caller = regs;
        let step = cfi.step(&mut context, realign.0, &mut caller, true, &mut read);
        assert_eq!(step, Step::Caller);
        assert_eq!(caller[RSP], Some(entry_sp + 8));
        assert_eq!(caller[3], regs[3]);

        // A stack cut before the return address ends the unwinding there.
        regs[RSP] = Some(entry_sp + 64);
        let mut caller = regs;
        let step = cfi.step(&mut context, realign.0, &mut caller, true, &mut read);
        assert_eq!(step, Step::Failed);
        assert_eq!(caller, regs);
        // No FDE: framehop's turn.
        let step = cfi.step(
            &mut context,
            plain.0 + plain.1 + 64,
            &mut caller,
            false,
            &mut read,
        );
        assert_eq!(step, Step::Unknown);
    }
}
