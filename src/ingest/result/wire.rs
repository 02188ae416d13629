//! The readers behind [`super::parse`]: serde visitors that take a result's bytes straight into
//! its typed form, with the leniency of the facts (a value of the wrong type is absent, never an
//! error) and the caps that bound what one result keeps in memory, and the sniffing of files
//! that are not results. No `serde_json::Value` is built: a 16 MiB file of small objects would
//! take gigabytes as one.

use std::borrow::Cow;
use std::cell::Cell;
use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::{Facts, GpuPath, Neighbor, NicFacts, NicHealth, Text, Transceiver};

/// The longest string a result keeps (names, messages, expected and actual values, facts);
/// longer ones are cut and end in `…`.
pub(crate) const MAX_TEXT: usize = 4 << 10;

/// What one result's NIC facts may take in memory, estimated; NICs past it are counted, not kept.
pub(super) const FACTS_BUDGET: usize = 256 << 10;

/// Entries kept of one NIC's strings and of its counters; a NIC records a few dozen.
const MAX_NIC_ENTRIES: usize = 256;

/// Lanes kept of a transceiver's power readings (8 on a 400G module).
const MAX_LANES: usize = 16;

/// The estimated cost of a kept string or map entry beyond its text: its allocation and node.
pub(super) const ENTRY_COST: usize = 64;

/// `s`, cut to [`MAX_TEXT`] bytes (on a character boundary) with `…` marking the cut.
pub(crate) fn capped(s: &str) -> String {
    if s.len() <= MAX_TEXT {
        return s.to_owned();
    }
    let mut end = MAX_TEXT - '…'.len_utf8();
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    let mut out = String::with_capacity(end + '…'.len_utf8());
    out.push_str(&s[..end]);
    out.push('…');
    out
}

/// `s` capped as [`capped`] does, borrowed when it is short enough.
fn capped_cow(s: &str) -> Cow<'_, str> {
    if s.len() <= MAX_TEXT {
        Cow::Borrowed(s)
    } else {
        Cow::Owned(capped(s))
    }
}

fn capped_owned(s: String) -> String {
    if s.len() <= MAX_TEXT { s } else { capped(&s) }
}

/// Visitor methods for the JSON types a lenient reader does not want: the value is consumed and
/// the reader's default returned.
macro_rules! ignore {
    (bool) => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
    };
    (i64) => {
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
    };
    (u64) => {
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
    };
    (f64) => {
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
    };
    (str) => {
        fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
    };
    (unit) => {
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
    };
    (seq) => {
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(Default::default())
        }
    };
    (map) => {
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok(Default::default())
        }
    };
    ($($kind:ident),+) => {
        $(ignore!($kind);)+
    };
}

/// A string field of the result (strict: another type is an error, as for `String`), capped.
pub(super) fn text<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    d.deserialize_string(TextVisitor)
}

/// An optional string field: `null` or absent is `None`, another type an error.
pub(super) fn opt_text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    d.deserialize_option(Optional(TextVisitor))
}

/// `null` or absent as `None`, else what the inner visitor reads: the same strictness for an
/// optional field as for a required one.
struct Optional<V>(V);

impl<'de, V: Visitor<'de>> Visitor<'de> for Optional<V> {
    type Value = Option<V::Value>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("option")
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self.0).map(Some)
    }
}

/// A string field of a check (strict, as [`text`]), capped and shared: read from the input
/// without a copy of its own when it has no escapes.
pub(super) fn shared_text<'de, D: Deserializer<'de>>(d: D) -> Result<Text, D::Error> {
    d.deserialize_str(SharedTextVisitor)
}

/// An optional [`shared_text`]: `null` or absent is `None`, another type an error.
pub(super) fn opt_shared_text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Text>, D::Error> {
    d.deserialize_option(Optional(SharedTextVisitor))
}

struct SharedTextVisitor;

impl Visitor<'_> for SharedTextVisitor {
    type Value = Text;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<Text, E> {
        Ok(Text::new(&capped_cow(s)))
    }
}

struct TextVisitor;

impl Visitor<'_> for TextVisitor {
    type Value = String;
    // The words of serde's own `String`, so messages do not change with the reader.
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<String, E> {
        Ok(capped(s))
    }
    fn visit_string<E: de::Error>(self, s: String) -> Result<String, E> {
        Ok(capped_owned(s))
    }
}

/// Any value; a string (capped) or nothing.
#[derive(Default)]
struct LooseText(Option<String>);

impl<'de> Deserialize<'de> for LooseText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = LooseText;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<LooseText, E> {
                Ok(LooseText(Some(capped(s))))
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<LooseText, E> {
                Ok(LooseText(Some(capped_owned(s))))
            }
            ignore!(bool, i64, u64, f64, unit, seq, map);
        }
        d.deserialize_any(V)
    }
}

/// Any value; a finite number or nothing.
#[derive(Default)]
struct LooseNum(Option<f64>);

impl<'de> Deserialize<'de> for LooseNum {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = LooseNum;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<LooseNum, E> {
                Ok(LooseNum(Some(v as f64)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<LooseNum, E> {
                Ok(LooseNum(Some(v as f64)))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<LooseNum, E> {
                Ok(LooseNum(Some(v).filter(|v| v.is_finite())))
            }
            ignore!(bool, str, unit, seq, map);
        }
        d.deserialize_any(V)
    }
}

/// Any value; the lanes of an array (each a number or nothing) or no lanes.
#[derive(Default)]
struct Lanes(Vec<Option<f64>>);

impl<'de> Deserialize<'de> for Lanes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Lanes;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Lanes, A::Error> {
                let mut lanes = Vec::new();
                while let Some(LooseNum(v)) = seq.next_element()? {
                    if lanes.len() < MAX_LANES {
                        lanes.push(v);
                    }
                }
                Ok(Lanes(lanes))
            }
            ignore!(bool, i64, u64, f64, str, unit, map);
        }
        d.deserialize_any(V)
    }
}

/// A map key, borrowed from the input when it has no escapes.
struct Key<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(s)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(s.to_owned())))
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(s)))
            }
        }
        d.deserialize_str(V)
    }
}

/// `facts`: any value; only an object's `kernel`, `ofed`, `nics` and `gpu_path` are read. With the number
/// of NICs not kept (past [`FACTS_BUDGET`]).
#[derive(Default)]
pub(super) struct ReadFacts(pub Facts, pub usize);

impl<'de> Deserialize<'de> for ReadFacts {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ReadFacts;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ReadFacts, A::Error> {
                let mut facts = Facts::default();
                let mut not_kept = 0;
                // A key given twice counts once, the last time, as in any JSON object reader.
                while let Some(Key(key)) = map.next_key()? {
                    match key.as_ref() {
                        "kernel" => facts.kernel = map.next_value::<LooseText>()?.0,
                        "ofed" => facts.ofed = map.next_value::<LooseText>()?.0,
                        "nics" => {
                            let Nics {
                                nics,
                                health,
                                dropped,
                            } = map.next_value()?;
                            facts.nics = nics;
                            facts.health = health;
                            not_kept = dropped;
                        }
                        "gpu_path" => {
                            let left = Cell::new(GPU_PATH_NODES);
                            let value = map.next_value_seed(Bounded(&left))?;
                            facts.gpu_path = GpuPath::read(&value);
                        }
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(ReadFacts(facts, not_kept))
            }
            ignore!(bool, i64, u64, f64, str, unit, seq);
        }
        d.deserialize_any(V)
    }
}

/// `facts.nics`: per device, its string values and its health facts; NICs are kept while they
/// fit in [`FACTS_BUDGET`], the others counted.
#[derive(Default)]
struct Nics {
    nics: BTreeMap<String, NicFacts>,
    health: BTreeMap<String, NicHealth>,
    dropped: usize,
}

impl<'de> Deserialize<'de> for Nics {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Nics;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Nics, A::Error> {
                let mut out = Nics::default();
                let mut used = 0;
                while let Some(Key(dev)) = map.next_key()? {
                    let dev = capped(&dev);
                    let nic: Option<Nic> = map.next_value::<LooseNic>()?.0;
                    // The last value of a device counts, also when it is not an object.
                    out.nics.remove(&dev);
                    out.health.remove(&dev);
                    let Some(nic) = nic else { continue };
                    let size = dev.len() + nic.size();
                    if used + size > FACTS_BUDGET {
                        out.dropped += 1;
                        continue;
                    }
                    used += size;
                    if let Some(health) = nic.health() {
                        out.health.insert(dev.clone(), health);
                    }
                    out.nics.insert(dev, nic.strings.into());
                }
                Ok(out)
            }
            ignore!(bool, i64, u64, f64, str, unit, seq);
        }
        d.deserialize_any(V)
    }
}

/// One NIC's facts object as read: every string value, and the objects health is made of.
#[derive(Default)]
struct Nic {
    strings: BTreeMap<Text, Text>,
    /// Whether any of the health keys is there, whatever its value.
    has_health: bool,
    transceiver: Option<Transceiver>,
    link: Numbers,
    pcie: Pcie,
    counters: BTreeMap<String, f64>,
    neighbor: Option<Neighbor>,
}

impl Nic {
    /// What it takes in memory, roughly: its text and a fixed cost per entry.
    fn size(&self) -> usize {
        let strings: usize = self
            .strings
            .iter()
            .map(|(k, v)| k.len() + v.len() + ENTRY_COST)
            .sum();
        let counters: usize = self.counters.keys().map(|k| k.len() + ENTRY_COST).sum();
        let transceiver = self.transceiver.as_ref().map_or(0, |t| {
            t.vendor.len()
                + t.part_number.len()
                + 16 * (t.tx_power_dbm.len() + t.rx_power_dbm.len())
        });
        let neighbor = self.neighbor.as_ref().map_or(0, |n| {
            n.source.len() + n.switch.len() + n.port.len() + n.port_descr.len()
        });
        let pcie = self.pcie.speed.as_ref().map_or(0, String::len)
            + self.pcie.max_speed.as_ref().map_or(0, String::len);
        std::mem::size_of::<NicHealth>() + strings + counters + transceiver + neighbor + pcie
    }

    fn health(&self) -> Option<NicHealth> {
        if !self.has_health {
            return None;
        }
        let text = |k: &str| self.strings.get(k).map(Text::to_string);
        Some(NicHealth {
            netdev: text("netdev").unwrap_or_default(),
            transceiver: self.transceiver.clone(),
            transceiver_note: text("transceiver_note"),
            speed_mbps: self.link.get("speed_mbps"),
            width: self.link.get("width"),
            max_speed_mbps: self.link.get("max_speed_mbps"),
            pcie_speed: self.pcie.speed.clone().filter(|s| !s.is_empty()),
            pcie_width: self.pcie.numbers.get("width"),
            pcie_max_speed: self.pcie.max_speed.clone().filter(|s| !s.is_empty()),
            pcie_max_width: self.pcie.numbers.get("max_width"),
            counters: self.counters.clone(),
            neighbor: self.neighbor.clone(),
        })
    }
}

/// The numbers of an object the reader looks for, by key (`link`, and the PCIe widths).
#[derive(Default, Clone)]
struct Numbers(Vec<(&'static str, f64)>);

impl Numbers {
    fn get(&self, key: &str) -> Option<f64> {
        self.0.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
    }
    fn set(&mut self, key: &'static str, v: Option<f64>) {
        self.0.retain(|(k, _)| *k != key);
        if let Some(v) = v {
            self.0.push((key, v));
        }
    }
}

#[derive(Default, Clone)]
struct Pcie {
    speed: Option<String>,
    max_speed: Option<String>,
    numbers: Numbers,
}

/// A NIC's facts: an object, or nothing.
#[derive(Default)]
struct LooseNic(Option<Nic>);

impl<'de> Deserialize<'de> for LooseNic {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = LooseNic;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<LooseNic, A::Error> {
                let mut nic = Nic::default();
                while let Some(Key(key)) = map.next_key()? {
                    let kind = match key.as_ref() {
                        "transceiver" => Field::Transceiver,
                        "link" => Field::Link,
                        "pcie" => Field::Pcie,
                        "counters" => Field::Counters,
                        "neighbor" => Field::Neighbor,
                        _ => Field::Other,
                    };
                    let mut value = map.next_value_seed(kind)?;
                    let key = Text::new(&capped_cow(&key));
                    if let NicValue::Text(s) = &mut value {
                        if nic.strings.len() < MAX_NIC_ENTRIES || nic.strings.contains_key(&key) {
                            nic.strings.insert(key, std::mem::take(s));
                        }
                    } else {
                        nic.strings.remove(&key);
                    }
                    if kind == Field::Other {
                        continue;
                    }
                    nic.has_health = true;
                    // The last value of a key counts: one that is not what it should be
                    // clears what an earlier one gave.
                    match (kind, value) {
                        (Field::Transceiver, NicValue::Transceiver(t)) => nic.transceiver = Some(t),
                        (Field::Transceiver, _) => nic.transceiver = None,
                        (Field::Link, NicValue::Link(l)) => nic.link = l,
                        (Field::Link, _) => nic.link = Numbers::default(),
                        (Field::Pcie, NicValue::Pcie(p)) => nic.pcie = p,
                        (Field::Pcie, _) => nic.pcie = Pcie::default(),
                        (Field::Counters, NicValue::Counters(c)) => nic.counters = c,
                        (Field::Counters, _) => nic.counters = BTreeMap::new(),
                        (Field::Neighbor, NicValue::Neighbor(n)) => nic.neighbor = Some(n),
                        (Field::Neighbor, _) => nic.neighbor = None,
                        (Field::Other, _) => {}
                    }
                }
                Ok(LooseNic(Some(nic)))
            }
            ignore!(bool, i64, u64, f64, str, unit, seq);
        }
        d.deserialize_any(V)
    }
}

/// Which key of a NIC's facts a value is under: how an object there is read.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Field {
    Transceiver,
    Link,
    Pcie,
    Counters,
    Neighbor,
    Other,
}

/// A value in a NIC's facts: a string (kept in its strings), an object of a health key, or
/// anything else.
#[derive(Default)]
enum NicValue {
    Text(Text),
    Transceiver(Transceiver),
    Link(Numbers),
    Pcie(Pcie),
    Counters(BTreeMap<String, f64>),
    Neighbor(Neighbor),
    #[default]
    Other,
}

impl<'de> DeserializeSeed<'de> for Field {
    type Value = NicValue;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<NicValue, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Field {
    type Value = NicValue;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any value")
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<NicValue, E> {
        Ok(NicValue::Text(Text::new(&capped_cow(s))))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<NicValue, A::Error> {
        Ok(match self {
            Field::Transceiver => {
                let mut t = Transceiver::default();
                while let Some(Key(key)) = map.next_key()? {
                    match key.as_ref() {
                        "vendor" => t.vendor = text_or_empty(&mut map)?,
                        "part_number" => t.part_number = text_or_empty(&mut map)?,
                        "temperature_c" => t.temperature_c = map.next_value::<LooseNum>()?.0,
                        "tx_power_dbm" => t.tx_power_dbm = map.next_value::<Lanes>()?.0,
                        "rx_power_dbm" => t.rx_power_dbm = map.next_value::<Lanes>()?.0,
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                NicValue::Transceiver(t)
            }
            Field::Link => {
                let mut link = Numbers::default();
                while let Some(Key(key)) = map.next_key()? {
                    let slot = match key.as_ref() {
                        "speed_mbps" => "speed_mbps",
                        "width" => "width",
                        "max_speed_mbps" => "max_speed_mbps",
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                            continue;
                        }
                    };
                    link.set(slot, map.next_value::<LooseNum>()?.0);
                }
                NicValue::Link(link)
            }
            Field::Pcie => {
                let mut p = Pcie::default();
                while let Some(Key(key)) = map.next_key()? {
                    match key.as_ref() {
                        "speed" => p.speed = map.next_value::<LooseText>()?.0,
                        "max_speed" => p.max_speed = map.next_value::<LooseText>()?.0,
                        "width" => p.numbers.set("width", map.next_value::<LooseNum>()?.0),
                        "max_width" => {
                            p.numbers.set("max_width", map.next_value::<LooseNum>()?.0);
                        }
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                NicValue::Pcie(p)
            }
            Field::Counters => {
                let mut counters = BTreeMap::new();
                while let Some(Key(key)) = map.next_key()? {
                    let key = capped(&key);
                    match map.next_value::<LooseNum>()?.0 {
                        Some(v)
                            if counters.len() < MAX_NIC_ENTRIES || counters.contains_key(&key) =>
                        {
                            counters.insert(key, v);
                        }
                        Some(_) => {}
                        None => {
                            counters.remove(&key);
                        }
                    }
                }
                NicValue::Counters(counters)
            }
            Field::Neighbor => {
                let mut n = Neighbor::default();
                while let Some(Key(key)) = map.next_key()? {
                    match key.as_ref() {
                        "source" => n.source = text_or_empty(&mut map)?,
                        "switch" => n.switch = text_or_empty(&mut map)?,
                        "port" => n.port = text_or_empty(&mut map)?,
                        "port_descr" => n.port_descr = text_or_empty(&mut map)?,
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                NicValue::Neighbor(n)
            }
            Field::Other => {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                NicValue::Other
            }
        })
    }
    // An integer (`gid_index`) is kept as its text, as the facts compare and show it.
    fn visit_i64<E: de::Error>(self, n: i64) -> Result<NicValue, E> {
        Ok(NicValue::Text(Text::new(&n.to_string())))
    }
    fn visit_u64<E: de::Error>(self, n: u64) -> Result<NicValue, E> {
        Ok(NicValue::Text(Text::new(&n.to_string())))
    }
    ignore!(bool, f64, unit, seq);
}

fn text_or_empty<'de, A: MapAccess<'de>>(map: &mut A) -> Result<String, A::Error> {
    Ok(map.next_value::<LooseText>()?.0.unwrap_or_default())
}

/// What the first look at a file that is not plainly a result finds: whether it is an object,
/// and its `schema` (the last one, as any JSON object reader keeps). Every value is parsed as
/// `serde_json::Value` would parse it, so a file that is not JSON fails with the same message,
/// but nothing is kept except a bounded copy of `schema`.
pub(super) enum Sniffed {
    NotAnObject,
    Object { schema: Option<Value> },
}

impl<'de> Deserialize<'de> for Sniffed {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Sniffed;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any valid JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Sniffed, A::Error> {
                let mut schema = None;
                while let Some(Key(key)) = map.next_key()? {
                    if key == "schema" {
                        let left = Cell::new(SCHEMA_NODES);
                        schema = Some(map.next_value_seed(Bounded(&left))?);
                    } else {
                        map.next_value::<Skim>()?;
                    }
                }
                Ok(Sniffed::Object { schema })
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Sniffed, A::Error> {
                while seq.next_element::<Skim>()?.is_some() {}
                Ok(Sniffed::NotAnObject)
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Sniffed, E> {
                Ok(Sniffed::NotAnObject)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Sniffed, E> {
                Ok(Sniffed::NotAnObject)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Sniffed, E> {
                Ok(Sniffed::NotAnObject)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Sniffed, E> {
                Ok(Sniffed::NotAnObject)
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Sniffed, E> {
                Ok(Sniffed::NotAnObject)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Sniffed, E> {
                Ok(Sniffed::NotAnObject)
            }
        }
        d.deserialize_any(V)
    }
}

/// Values of `facts.gpu_path` read before its typed form is taken (an 8-GPU host records about
/// 300); past them it is cut.
const GPU_PATH_NODES: usize = 4096;

/// Values of a `schema` that is not a string kept for the message; past them it is cut.
const SCHEMA_NODES: usize = 64;

/// Any JSON value, parsed as `Value` parses it (every string read, so checked as UTF-8) and
/// dropped.
#[derive(Default)]
struct Skim;

impl<'de> Deserialize<'de> for Skim {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Skim;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any valid JSON value")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Skim, A::Error> {
                while seq.next_element::<Skim>()?.is_some() {}
                Ok(Skim)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Skim, A::Error> {
                while map.next_entry::<Key<'de>, Skim>()?.is_some() {}
                Ok(Skim)
            }
            ignore!(bool, i64, u64, f64, str, unit);
        }
        d.deserialize_any(V)
    }
}

/// A `Value` of at most `left` nodes (strings capped); what does not fit is parsed and dropped.
struct Bounded<'a>(&'a Cell<usize>);

impl<'de> DeserializeSeed<'de> for Bounded<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Bounded<'_> {
    type Value = Value;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any valid JSON value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(capped(s)))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        loop {
            if self.0.get() == 0 {
                if seq.next_element::<Skim>()?.is_none() {
                    break;
                }
                continue;
            }
            self.0.set(self.0.get() - 1);
            match seq.next_element_seed(Bounded(self.0))? {
                Some(v) => items.push(v),
                None => break,
            }
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = serde_json::Map::new();
        while let Some(Key(key)) = map.next_key()? {
            if self.0.get() == 0 {
                map.next_value::<Skim>()?;
                continue;
            }
            self.0.set(self.0.get() - 1);
            let v = map.next_value_seed(Bounded(self.0))?;
            object.insert(capped(&key), v);
        }
        Ok(Value::Object(object))
    }
}

/// Any value; a string (capped) or `None`.
pub(super) fn loose_text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(LooseText::deserialize(d)?.0)
}
