//! Reading JSON while refusing an object that repeats a key (rule C12).
//!
//! serde_json keeps the last value of a repeated key. A tool whose own
//! parser keeps the first would act on a value the host never validated:
//! `{"path":"/etc/passwd","path":"/safe/x"}` passes a `^/safe/` pattern,
//! then opens `/etc/passwd`. serde_json has no option to refuse repeats, so
//! this module reads a [`Value`] with its own visitor, which is serde_json's
//! `Value` visitor with one check added; written here because no
//! well-kept crate offers that check for serde_json's `Value`.

use std::cell::Cell;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// A key that appears twice in one object, and where that object is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the key {key:?} appears more than once in the object at {}", if pointer.is_empty() { "the top level" } else { pointer.as_str() })]
#[non_exhaustive]
pub struct RepeatedKey {
    /// The repeated key.
    pub key: String,
    /// The JSON pointer of the object holding it (empty: the top level).
    pub pointer: String,
}

/// Why [`parse`] refused a text.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// Not JSON, or a number out of range: serde_json's complaint.
    Json(serde_json::Error),
    /// An object repeats a key.
    Repeated(RepeatedKey),
}

/// Parses `text` into a [`Value`], refusing an object that repeats a key.
pub(crate) fn parse(text: &str) -> Result<Value, ReadError> {
    let found = Cell::new(None);
    let mut de = serde_json::Deserializer::from_str(text);
    let value = Reader {
        at: At::Root,
        found: &found,
    }
    .deserialize(&mut de)
    .and_then(|v| de.end().map(|()| v));
    match (value, found.take()) {
        (_, Some(repeated)) => Err(ReadError::Repeated(repeated)),
        (Ok(value), None) => Ok(value),
        (Err(e), None) => Err(ReadError::Json(e)),
    }
}

/// Checks that no object in the JSON `text` repeats a key, for a reader that
/// parses the text itself (an MCP frame). Text that is not JSON passes: the
/// reader's own parser refuses it with its own error. Nothing is built but
/// each object's keys, borrowed from `text` where they hold no escapes.
pub fn check_unique_keys(text: &[u8]) -> Result<(), RepeatedKey> {
    let found = Cell::new(None);
    let mut de = serde_json::Deserializer::from_slice(text);
    let _ = de::Deserializer::deserialize_any(
        &mut de,
        KeysOnly {
            at: At::Root,
            found: &found,
        },
    );
    found.take().map_or(Ok(()), Err)
}

/// Where a value sits in the document: a path of segments kept on the stack
/// and written out only for an error.
#[derive(Clone, Copy)]
enum At<'a> {
    Root,
    Key(&'a At<'a>, &'a str),
    Index(&'a At<'a>, usize),
}

impl At<'_> {
    fn pointer(&self) -> String {
        match self {
            At::Root => String::new(),
            At::Key(parent, key) => format!(
                "{}/{}",
                parent.pointer(),
                key.replace('~', "~0").replace('/', "~1")
            ),
            At::Index(parent, i) => format!("{}/{i}", parent.pointer()),
        }
    }
}

struct Reader<'a> {
    at: At<'a>,
    found: &'a Cell<Option<RepeatedKey>>,
}

impl<'de> DeserializeSeed<'de> for Reader<'_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Reader<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        // serde_json's own parser hands over finite numbers only.
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(item) = seq.next_element_seed(Reader {
            at: At::Index(&self.at, items.len()),
            found: self.found,
        })? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let mut map = Map::new();
        while let Some(key) = access.next_key::<String>()? {
            if map.contains_key(&key) {
                let repeated = RepeatedKey {
                    pointer: self.at.pointer(),
                    key,
                };
                let message = repeated.to_string();
                self.found.set(Some(repeated));
                return Err(de::Error::custom(message));
            }
            let value = access.next_value_seed(Reader {
                at: At::Key(&self.at, &key),
                found: self.found,
            })?;
            map.insert(key, value);
        }
        Ok(Value::Object(map))
    }
}

/// Walks a document checking each object's keys, building nothing else.
struct KeysOnly<'a> {
    at: At<'a>,
    found: &'a Cell<Option<RepeatedKey>>,
}

impl<'de> DeserializeSeed<'de> for KeysOnly<'_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

/// A key, borrowed from the text when it holds no escape.
struct Key<'de>(std::borrow::Cow<'de, str>);

impl<'de> de::Deserialize<'de> for Key<'de> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(v.into()))
            }
            fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(v.to_owned().into()))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

impl<'de> Visitor<'de> for KeysOnly<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0;
        while seq
            .next_element_seed(KeysOnly {
                at: At::Index(&self.at, i),
                found: self.found,
            })?
            .is_some()
        {
            i += 1;
        }
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<(), A::Error> {
        // Objects in MCP frames hold a handful of keys: a linear scan beats
        // hashing until there are many.
        let mut keys: Vec<Key<'de>> = Vec::new();
        let mut many: std::collections::HashSet<std::borrow::Cow<'de, str>> =
            std::collections::HashSet::new();
        while let Some(key) = access.next_key::<Key<'de>>()? {
            let repeated = if keys.len() < 32 {
                keys.iter().any(|k| k.0 == key.0)
            } else {
                if many.is_empty() {
                    many.extend(keys.iter().map(|k| k.0.clone()));
                }
                !many.insert(key.0.clone())
            };
            if repeated {
                self.found.set(Some(RepeatedKey {
                    pointer: self.at.pointer(),
                    key: key.0.into_owned(),
                }));
                return Err(de::Error::custom("repeated key"));
            }
            access.next_value_seed(KeysOnly {
                at: At::Key(&self.at, &key.0),
                found: self.found,
            })?;
            keys.push(key);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn c12_a_repeated_key_is_found_at_any_depth_and_in_any_spelling() {
        for (text, key, pointer) in [
            (r#"{"path":"/etc/passwd","path":"/safe/x"}"#, "path", ""),
            (r#"{"a":[{},{"b":{"k":1,"k":2}}]}"#, "k", "/a/1/b"),
            // The same key written with an escape is the same key.
            (r#"{"path":1,"\u0070ath":2}"#, "path", ""),
            (r#"{"x/y":{"~":1,"~":1}}"#, "~", "/x~1y"),
        ] {
            assert_eq!(
                check_unique_keys(text.as_bytes()),
                Err(RepeatedKey {
                    key: key.into(),
                    pointer: pointer.into()
                }),
                "{text}"
            );
        }
    }

    #[test]
    fn c12_values_read_as_serde_json_reads_them() {
        let text =
            r#"{"a":[1,-2,3.5,1e300,18446744073709551615,"s\n",true,null,{}],"b":{"c":"d"}}"#;
        let ours = match parse(text) {
            Ok(v) => v,
            Err(e) => panic!("{e:?}"),
        };
        assert_eq!(ours, serde_json::from_str::<Value>(text).unwrap());
        assert_eq!(ours["a"][2], json!(3.5));
        assert!(matches!(parse("{} x"), Err(ReadError::Json(_))));
        assert!(matches!(parse("[1e400]"), Err(ReadError::Json(_))));
        assert_eq!(check_unique_keys(b"not json"), Ok(()));
    }

    #[test]
    fn c12_objects_with_many_keys_are_checked_too() {
        let mut text = String::from("{");
        for i in 0..100 {
            text.push_str(&format!("\"k{i}\":{i},"));
        }
        assert_eq!(
            check_unique_keys(format!("{text}\"end\":0}}").as_bytes()),
            Ok(())
        );
        let repeated = format!("{text}\"k7\":0}}");
        assert_eq!(
            check_unique_keys(repeated.as_bytes()).unwrap_err().key,
            "k7"
        );
        assert!(matches!(parse(&repeated), Err(ReadError::Repeated(_))));
    }
}
