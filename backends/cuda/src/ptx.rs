//! Finding the `.global` variables a PTX module defines.
//!
//! The driver can look a global up by name (`cuModuleGetGlobal`) but cannot
//! list them, so the names come from the PTX text: module-scope statements
//! `[.visible|.weak|.common] .global [.align N] [.vN] .type name[dims] [= init];`
//! (directives like `.version` end without `;` and are skipped).
//! `.extern` declarations (defined elsewhere) are skipped.
//!
//! ```
//! use reprise_cuda::ptx::{globals, PtxGlobal};
//! let ptx = ".version 7.0\n.visible .global .align 4 .u32 counter;\n\
//!            .global .b8 table[64] = {1, 2};\n";
//! assert_eq!(
//!     globals(ptx),
//!     [
//!         PtxGlobal { name: "counter".into(), size: Some(4) },
//!         PtxGlobal { name: "table".into(), size: Some(64) },
//!     ]
//! );
//! ```

/// One global variable of a PTX module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PtxGlobal {
    /// Its name.
    pub name: String,
    /// Its size in bytes as declared, when the declaration says (arrays with
    /// `[]` dimensions sized by their initializer do not).
    pub size: Option<u64>,
}

/// Every `.global` variable `ptx` defines, in order of appearance.
pub fn globals(ptx: &str) -> Vec<PtxGlobal> {
    statements(ptx)
        .iter()
        .filter_map(|s| parse_global(s))
        .collect()
}

/// The kernels (`.entry` functions) `ptx` defines, in order of appearance.
///
/// ```
/// let ptx = ".version 7.0\n.visible .entry saxpy(.param .f32 a) { ret; }\n\
///            .func helper() { ret; }\n.entry other() { ret; }\n";
/// assert_eq!(reprise_cuda::ptx::entries(ptx), ["saxpy", "other"]);
/// ```
pub fn entries(ptx: &str) -> Vec<String> {
    statements(ptx)
        .iter()
        .filter_map(|s| {
            let mut words = s.split_whitespace().skip_while(|w| *w != ".entry");
            words.next()?;
            let name = words.next()?;
            let name = name.split('(').next()?;
            (!name.is_empty()).then(|| name.to_string())
        })
        .collect()
}

/// The parameter sizes of the kernel `kernel` in `ptx`, from its `.entry`
/// declaration (`.param .u64 p`, `.param .align 8 .b8 s[24]`), for drivers
/// without `cuFuncGetParamInfo`; `None` when `ptx` does not define it or a
/// parameter's type is not one PTX has.
///
/// ```
/// let ptx = ".visible .entry k(.param .f32 k_param_0, .param .u64 .ptr .global .align 1 k_param_1,\n\
///            .param .align 8 .b8 k_param_2[24], .param .u16 k_param_3) { ret; }";
/// assert_eq!(reprise_cuda::ptx::param_sizes(ptx, "k"), Some(vec![4, 8, 24, 2]));
/// assert_eq!(reprise_cuda::ptx::param_sizes(ptx, "other"), None);
/// ```
pub fn param_sizes(ptx: &str, kernel: &str) -> Option<Vec<u32>> {
    statements(ptx).iter().find_map(|s| {
        let at = s.find(".entry")?;
        let rest = s[at + ".entry".len()..].trim_start();
        let open = rest.find('(');
        let name = rest[..open.unwrap_or(rest.len())].trim();
        if name != kernel {
            return None;
        }
        let Some(open) = open else {
            return Some(Some(Vec::new()));
        };
        let close = rest.rfind(')')?;
        let list = rest.get(open + 1..close)?;
        Some(
            list.split(',')
                .filter(|p| !p.trim().is_empty())
                .map(param_size)
                .collect::<Option<Vec<u32>>>(),
        )
    })?
}

/// The size of one `.param` declaration.
fn param_size(decl: &str) -> Option<u32> {
    let mut words = decl.split_whitespace();
    if words.next()? != ".param" {
        return None;
    }
    let mut element = None;
    let mut count = 1u32;
    for w in words {
        if let Some(size) = type_size(w) {
            element = u32::try_from(size).ok();
        } else if let Some(open) = w.find('[') {
            let dims = &w[open..];
            for d in dims.split(['[', ']']).filter(|d| !d.is_empty()) {
                count = count.checked_mul(d.trim().parse().ok()?)?;
            }
        }
    }
    element?.checked_mul(count)
}

/// Splits PTX into statements at `;`, `{` and `}` outside initializers, with
/// comments and string literals removed.
fn statements(ptx: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_init = false;
    let mut chars = ptx.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
                cur.push(' ');
            }
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut prev = ' ';
                for c in chars.by_ref() {
                    if prev == '*' && c == '/' {
                        break;
                    }
                    prev = c;
                }
                cur.push(' ');
            }
            '"' => {
                for c in chars.by_ref() {
                    if c == '"' {
                        break;
                    }
                }
                cur.push(' ');
            }
            '=' => {
                in_init = true;
                cur.push(c);
            }
            ';' => {
                out.push(std::mem::take(&mut cur));
                in_init = false;
            }
            '{' | '}' if !in_init => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out
}

/// Bytes of one element of a PTX fundamental type.
fn type_size(t: &str) -> Option<u64> {
    Some(match t {
        ".b8" | ".u8" | ".s8" => 1,
        ".b16" | ".u16" | ".s16" | ".f16" | ".bf16" => 2,
        ".b32" | ".u32" | ".s32" | ".f32" | ".f16x2" | ".bf16x2" => 4,
        ".b64" | ".u64" | ".s64" | ".f64" => 8,
        ".b128" => 16,
        _ => return None,
    })
}

/// Parses one statement as a `.global` variable definition.
fn parse_global(stmt: &str) -> Option<PtxGlobal> {
    let decl = stmt.split('=').next()?;
    let all: Vec<&str> = decl.split_whitespace().collect();
    // Directives without a `;` (`.version`, `.target`, `.file`) may come
    // first in the same statement; linkage directives come right before the
    // state space.
    let at = all.iter().position(|&t| t == ".global")?;
    if all[..at].last() == Some(&".extern") {
        return None;
    }
    let mut tokens = all[at + 1..].iter().copied();
    let mut elem = None;
    let mut vector = 1;
    let mut rest = String::new();
    while let Some(t) = tokens.next() {
        match t {
            ".align" => {
                tokens.next()?;
            }
            ".v2" => vector = 2,
            ".v4" => vector = 4,
            ".v8" => vector = 8,
            _ if t.starts_with('.') && elem.is_none() => elem = Some(type_size(t)),
            _ => {
                // The name and its dimensions, possibly split by spaces
                // (`table [64]`).
                rest.push_str(t);
                rest.extend(tokens.by_ref());
            }
        }
    }
    // `.texref`, `.samplerref` and other non-data types have no size but are
    // no variables a recording could save either.
    let elem = elem??;
    let (name, dims) = match rest.find('[') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest.as_str(), ""),
    };
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_$%.".contains(c))
    {
        return None;
    }
    let mut size = Some(elem * vector);
    for d in dims.split(']').filter(|d| !d.is_empty()) {
        let n = d.strip_prefix('[')?.trim();
        size = match n.parse::<u64>() {
            Ok(n) => size.and_then(|s| s.checked_mul(n)),
            Err(_) if n.is_empty() => None,
            Err(_) => return None,
        };
    }
    Some(PtxGlobal {
        name: name.to_owned(),
        size,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(name: &str, size: Option<u64>) -> PtxGlobal {
        PtxGlobal {
            name: name.into(),
            size,
        }
    }

    #[test]
    fn declarations_of_every_shape() {
        let ptx = r#"
//
// Generated by LLVM NVPTX Back-End
//
.version 7.0
.target sm_80
.address_size 64
.file 1 "a;b.cu"
	// .globl	k // .global .u32 commented;
.visible .global .align 4 .f32 bias = 0f3F000000;
.global .align 8 .u64 plain;
.weak .global .align 1 .b8 bytes [3] = {1, 2, 3};
.visible .global .align 16 .v4 .f32 vec4;
.global .u16 grid[2][3];
.global .b8 sized_by_init[] = {1, 2};
.extern .global .align 4 .u32 elsewhere;
.const .align 4 .u32 constant;
/* .global .u32 in_block_comment; */
.visible .global .align 8 .u64 ptrs[2] = {generic(bias), 0};
.visible .entry k(
	.param .u64 k_param_0
)
{
	.reg .b32 %r<2>;
	ld.global.u32 %r1, [bias];
	st.global.u32 [plain], %r1;
	ret;
}
.visible .global .align 4 .u32 after_function;
"#;
        assert_eq!(
            globals(ptx),
            [
                g("bias", Some(4)),
                g("plain", Some(8)),
                g("bytes", Some(3)),
                g("vec4", Some(16)),
                g("grid", Some(12)),
                g("sized_by_init", None),
                g("ptrs", Some(16)),
                g("after_function", Some(4)),
            ]
        );
    }

    #[test]
    fn garbage_is_not_a_global() {
        assert!(globals("").is_empty());
        assert!(globals(".global").is_empty());
        assert!(globals(".global .u32").is_empty());
        assert!(globals(".global .u32 x[abc];").is_empty());
        assert!(globals(".global .texref tex;").is_empty());
        assert!(globals("/* unterminated").is_empty());
        assert_eq!(globals(".global .u32 x"), [g("x", Some(4))]);
    }
}
