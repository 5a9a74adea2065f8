//! Protobuf wire-format primitives: varints and a field iterator.

use crate::DecodeError;

/// A field value as found on the wire, before any schema is applied.
#[derive(Debug, Clone, Copy)]
pub(crate) enum WireValue<'a> {
    /// Wire type 0.
    Varint(u64),
    /// Wire type 1: `float64` (JSON schemas' numbers).
    Fixed64(u64),
    /// Wire type 2: strings, bytes, nested messages, packed repeated scalars.
    Len(&'a [u8]),
    /// Wire type 5 (no Kubernetes type uses it; skipped).
    Fixed32,
}

impl WireValue<'_> {
    pub(crate) fn wire_type(&self) -> u8 {
        match self {
            WireValue::Varint(_) => 0,
            WireValue::Fixed64(_) => 1,
            WireValue::Len(_) => 2,
            WireValue::Fixed32 => 5,
        }
    }
}

/// Reads a base-128 varint from the front of `buf`, advancing it.
pub(crate) fn read_varint(buf: &mut &[u8]) -> Result<u64, DecodeError> {
    let mut value: u64 = 0;
    for (i, &byte) in buf.iter().enumerate().take(10) {
        let bits = u64::from(byte & 0x7f);
        if i == 9 && byte > 1 {
            return Err(DecodeError::VarintOverflow);
        }
        value |= bits << (7 * i);
        if byte & 0x80 == 0 {
            *buf = &buf[i + 1..];
            return Ok(value);
        }
    }
    if buf.len() >= 10 {
        Err(DecodeError::VarintOverflow)
    } else {
        Err(DecodeError::Truncated)
    }
}

fn take<'a>(buf: &mut &'a [u8], n: usize) -> Result<&'a [u8], DecodeError> {
    if buf.len() < n {
        return Err(DecodeError::Truncated);
    }
    let (head, tail) = buf.split_at(n);
    *buf = tail;
    Ok(head)
}

/// Iterates over the `(field number, value)` pairs of one encoded message.
/// After the first error it yields nothing more.
pub(crate) struct Fields<'a> {
    buf: &'a [u8],
}

impl<'a> Fields<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Fields { buf }
    }

    fn next_field(&mut self) -> Result<(u32, WireValue<'a>), DecodeError> {
        let key = read_varint(&mut self.buf)?;
        let number = key >> 3;
        if number == 0 || number > u64::from(u32::MAX >> 3) {
            return Err(DecodeError::InvalidFieldNumber(number));
        }
        let number = number as u32;
        let value = match key & 7 {
            0 => WireValue::Varint(read_varint(&mut self.buf)?),
            1 => {
                let bytes = take(&mut self.buf, 8)?;
                WireValue::Fixed64(u64::from_le_bytes(bytes.try_into().unwrap_or_default()))
            }
            2 => {
                let len = read_varint(&mut self.buf)?;
                let len = usize::try_from(len).map_err(|_| DecodeError::Truncated)?;
                WireValue::Len(take(&mut self.buf, len)?)
            }
            5 => {
                take(&mut self.buf, 4)?;
                WireValue::Fixed32
            }
            // 3/4 are proto2 groups, which Kubernetes never uses; 6/7 are invalid.
            other => return Err(DecodeError::UnsupportedWireType(other as u8)),
        };
        Ok((number, value))
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<(u32, WireValue<'a>), DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.buf.is_empty() {
            return None;
        }
        let item = self.next_field();
        if item.is_err() {
            self.buf = &[];
        }
        Some(item)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn varints() {
        let mut b: &[u8] = &[0x96, 0x01, 0xff];
        assert_eq!(read_varint(&mut b).unwrap(), 150);
        assert_eq!(b, &[0xff]);
        // -1 as int64: ten bytes.
        let mut b: &[u8] = &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        assert_eq!(read_varint(&mut b).unwrap() as i64, -1);
        let mut b: &[u8] = &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02];
        assert!(matches!(
            read_varint(&mut b),
            Err(DecodeError::VarintOverflow)
        ));
        let mut b: &[u8] = &[0xff; 11];
        assert!(matches!(
            read_varint(&mut b),
            Err(DecodeError::VarintOverflow)
        ));
        let mut b: &[u8] = &[0x80];
        assert!(matches!(read_varint(&mut b), Err(DecodeError::Truncated)));
        let mut b: &[u8] = &[];
        assert!(matches!(read_varint(&mut b), Err(DecodeError::Truncated)));
    }

    #[test]
    fn fields_iterate_and_stop_on_error() {
        // field 1 varint 5, field 2 len "hi", field 3 fixed32, then a truncated len.
        let buf = [
            0x08, 0x05, 0x12, 0x02, b'h', b'i', 0x1d, 1, 0, 0, 0, 0x22, 0x05, b'x',
        ];
        let items: Vec<_> = Fields::new(&buf).collect();
        assert_eq!(items.len(), 4);
        assert!(matches!(items[0], Ok((1, WireValue::Varint(5)))));
        assert!(matches!(items[1], Ok((2, WireValue::Len(b"hi")))));
        assert!(matches!(items[2], Ok((3, WireValue::Fixed32))));
        assert!(matches!(items[3], Err(DecodeError::Truncated)));
    }
}
