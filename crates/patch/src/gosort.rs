//! A faithful port of Go's `sort.SliceStable`.
//!
//! Strategic merge patch orders list items with a "less" function that is not
//! a strict weak ordering (items missing from the reference order compare as
//! "less" than everything). With such a comparator the result depends on the
//! exact algorithm, so we reproduce Go's insertion-sort + SymMerge rather than
//! using `slice::sort_by`.

/// Stable in-place sort using Go's algorithm and a Go-style `less`.
pub(crate) fn slice_stable<T>(data: &mut [T], less: impl Fn(&T, &T) -> bool) {
    let n = data.len();
    let mut block = 20;
    let (mut a, mut b) = (0, block);
    while b <= n {
        insertion_sort(data, a, b, &less);
        a = b;
        b += block;
    }
    insertion_sort(data, a, n, &less);
    while block < n {
        a = 0;
        b = 2 * block;
        while b <= n {
            sym_merge(data, a, a + block, b, &less);
            a = b;
            b += 2 * block;
        }
        let m = a + block;
        if m < n {
            sym_merge(data, a, m, n, &less);
        }
        block *= 2;
    }
}

fn insertion_sort<T>(data: &mut [T], a: usize, b: usize, less: &impl Fn(&T, &T) -> bool) {
    for i in a + 1..b {
        let mut j = i;
        while j > a && less(&data[j], &data[j - 1]) {
            data.swap(j, j - 1);
            j -= 1;
        }
    }
}

/// Merges the sorted runs `data[a..m]` and `data[m..b]` (Kim & Kutzner).
fn sym_merge<T>(data: &mut [T], a: usize, m: usize, b: usize, less: &impl Fn(&T, &T) -> bool) {
    if m - a == 1 {
        insert_first(data, a, m, b, less);
        return;
    }
    if b - m == 1 {
        insert_last(data, a, m, less);
        return;
    }
    let mid = (a + b) / 2;
    let n = mid + m;
    let (mut start, mut r) = if m > mid { (n - b, mid) } else { (a, m) };
    let p = n - 1;
    while start < r {
        let c = (start + r) / 2;
        if !less(&data[p - c], &data[c]) {
            start = c + 1;
        } else {
            r = c;
        }
    }
    let end = n - start;
    if start < m && m < end {
        rotate(data, start, m, end);
    }
    if a < start && start < mid {
        sym_merge(data, a, start, mid, less);
    }
    if mid < end && end < b {
        sym_merge(data, mid, end, b, less);
    }
}

/// Moves the single element `data[a]` into the sorted run `data[m..b]`.
fn insert_first<T>(data: &mut [T], a: usize, m: usize, b: usize, less: &impl Fn(&T, &T) -> bool) {
    let (mut i, mut j) = (m, b);
    while i < j {
        let h = (i + j) / 2;
        if less(&data[h], &data[a]) {
            i = h + 1;
        } else {
            j = h;
        }
    }
    for k in a..i.saturating_sub(1) {
        data.swap(k, k + 1);
    }
}

/// Moves the single element `data[m]` into the sorted run `data[a..m]`.
fn insert_last<T>(data: &mut [T], a: usize, m: usize, less: &impl Fn(&T, &T) -> bool) {
    let (mut i, mut j) = (a, m);
    while i < j {
        let h = (i + j) / 2;
        if !less(&data[m], &data[h]) {
            i = h + 1;
        } else {
            j = h;
        }
    }
    let mut k = m;
    while k > i {
        data.swap(k, k - 1);
        k -= 1;
    }
}

fn rotate<T>(data: &mut [T], a: usize, m: usize, b: usize) {
    let mut i = m - a;
    let mut j = b - m;
    while i != j {
        if i > j {
            swap_range(data, m - i, m, j);
            i -= j;
        } else {
            swap_range(data, m - i, m + j - i, i);
            j -= i;
        }
    }
    swap_range(data, m - i, m, i);
}

fn swap_range<T>(data: &mut [T], a: usize, b: usize, n: usize) {
    for i in 0..n {
        data.swap(a + i, b + i);
    }
}

#[cfg(test)]
mod tests {
    use super::slice_stable;

    /// With a consistent comparator Go's stable sort must agree with Rust's.
    #[test]
    fn agrees_with_std_stable_sort_for_consistent_less() {
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        for len in 0..200 {
            let items: Vec<(u8, usize)> = (0..len)
                .map(|i| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    ((seed % 7) as u8, i)
                })
                .collect();
            let mut ours = items.clone();
            slice_stable(&mut ours, |a, b| a.0 < b.0);
            let mut std = items;
            std.sort_by_key(|x| x.0);
            assert_eq!(ours, std, "len {len}");
        }
    }
}
