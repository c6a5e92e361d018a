//! A small JSON writer for the page's results (no serde in the wasm).

/// A JSON value.
#[derive(Debug, Clone)]
pub enum Json {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number, written as Rust writes it.
    Number(String),
    /// A string.
    Text(String),
    /// An array.
    Array(Vec<Json>),
    /// An object, its fields in order.
    Object(Vec<(String, Json)>),
}

impl Json {
    /// `{}`.
    pub fn object() -> Json {
        Json::Object(Vec::new())
    }

    /// `[]`.
    pub fn array() -> Json {
        Json::Array(Vec::new())
    }

    /// An array of numbers.
    pub fn usizes(values: &[usize]) -> Json {
        Json::Array(values.iter().map(|&v| v.into()).collect())
    }

    /// This object with `name` set to `value`.
    pub fn field(self, name: &str, value: impl Into<Json>) -> Json {
        match self {
            Json::Object(mut fields) => {
                fields.push((name.to_string(), value.into()));
                Json::Object(fields)
            }
            other => other,
        }
    }

    /// This array with `value` appended.
    pub fn push(self, value: impl Into<Json>) -> Json {
        match self {
            Json::Array(mut items) => {
                items.push(value.into());
                Json::Array(items)
            }
            other => other,
        }
    }
}

fn quote(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

impl std::fmt::Display for Json {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        fn write(j: &Json, out: &mut String) {
            match j {
                Json::Null => out.push_str("null"),
                Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
                Json::Number(n) => out.push_str(n),
                Json::Text(s) => quote(s, out),
                Json::Array(items) => {
                    out.push('[');
                    for (i, item) in items.iter().enumerate() {
                        if i > 0 {
                            out.push(',');
                        }
                        write(item, out);
                    }
                    out.push(']');
                }
                Json::Object(fields) => {
                    out.push('{');
                    for (i, (name, value)) in fields.iter().enumerate() {
                        if i > 0 {
                            out.push(',');
                        }
                        quote(name, out);
                        out.push(':');
                        write(value, out);
                    }
                    out.push('}');
                }
            }
        }
        let mut out = String::new();
        write(self, &mut out);
        f.write_str(&out)
    }
}

impl From<bool> for Json {
    fn from(b: bool) -> Json {
        Json::Bool(b)
    }
}

impl From<&str> for Json {
    fn from(s: &str) -> Json {
        Json::Text(s.to_string())
    }
}

impl From<String> for Json {
    fn from(s: String) -> Json {
        Json::Text(s)
    }
}

macro_rules! numbers {
    ($($t:ty),*) => {$(
        impl From<$t> for Json {
            fn from(n: $t) -> Json {
                if (n as f64).is_finite() {
                    Json::Number(n.to_string())
                } else {
                    Json::Null
                }
            }
        }
    )*};
}
numbers!(u32, u64, usize, f64);
