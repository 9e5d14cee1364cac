//! A fixed-capacity LRU cache used by the HTTP layer for rendered pages.

use std::collections::HashMap;
use std::hash::Hash;

pub struct LruCache<K, V> {
    capacity: usize,
    map: HashMap<K, usize>,
    entries: Vec<Entry<K, V>>,
    head: Option<usize>,
    tail: Option<usize>,
}

struct Entry<K, V> {
    key: K,
    value: V,
    prev: Option<usize>,
    next: Option<usize>,
}

impl<K: Hash + Eq + Clone, V> LruCache<K, V> {
    pub fn new(capacity: usize) -> Self {
        assert!(capacity > 0, "capacity must be positive");
        Self { capacity, map: HashMap::with_capacity(capacity), entries: Vec::with_capacity(capacity), head: None, tail: None }
    }

    pub fn get(&mut self, key: &K) -> Option<&V> {
        let index = *self.map.get(key)?;
        self.detach(index);
        self.push_front(index);
        Some(&self.entries[index].value)
    }

    pub fn put(&mut self, key: K, value: V) {
        if let Some(&index) = self.map.get(&key) {
            self.entries[index].value = value;
            self.detach(index);
            self.push_front(index);
            return;
        }
        let index = if self.entries.len() < self.capacity {
            self.entries.push(Entry { key: key.clone(), value, prev: None, next: None });
            self.entries.len() - 1
        } else {
            let last = self.tail.expect("a full cache has a tail");
            self.detach(last);
            let old = std::mem::replace(&mut self.entries[last], Entry { key: key.clone(), value, prev: None, next: None });
            self.map.remove(&old.key);
            last
        };
        self.map.insert(key, index);
        self.push_front(index);
    }

    fn detach(&mut self, index: usize) {
        let (prev, next) = (self.entries[index].prev, self.entries[index].next);
        match prev { Some(p) => self.entries[p].next = next, None => self.head = next }
        match next { Some(n) => self.entries[n].prev = prev, None => self.tail = prev }
    }

    fn push_front(&mut self, index: usize) {
        self.entries[index].prev = None;
        self.entries[index].next = self.head;
        if let Some(h) = self.head { self.entries[h].prev = Some(index); }
        self.head = Some(index);
        if self.tail.is_none() { self.tail = Some(index); }
    }
}
