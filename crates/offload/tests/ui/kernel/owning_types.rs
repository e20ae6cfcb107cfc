//! Types that own host memory cannot go to the device, by value or behind a
//! reference, whatever path names them.
use offload::prelude::*;
use std::rc::Rc;

#[kernel]
fn by_value(v: Vec<f32>, m: std::collections::HashMap<u32, u32>, a: [Rc<u8>; 2]) {}

#[kernel]
fn by_reference(s: &String, b: &mut [Box<u8>], out: &mut [f32]) {}

fn main() {}
