//! A game's line as the server sends it: the moves as written, the moves
//! as parsed and the position before each, kept in step with the
//! server's whole move list. Both records (kaissa's board and shakmaty's)
//! keep one; the rules come in as the function that plays a move.

use super::standard::RecordError;

/// The moves of a game and the positions they lead to, in any rules:
/// `P` a position, `M` a move.
#[derive(Clone, Debug)]
pub struct Line<P, M> {
    /// The moves as the server wrote them, to spot what is new.
    texts: Vec<String>,
    moves: Vec<M>,
    /// positions[i] is the position before moves[i]; the last one is the
    /// current position. Never empty.
    positions: Vec<P>,
}

impl<P: Clone, M: Copy> Line<P, M> {
    /// A line with no move yet, from `initial`.
    pub fn new(initial: P) -> Line<P, M> {
        Line {
            texts: Vec::new(),
            moves: Vec::new(),
            positions: vec![initial],
        }
    }

    /// Brings the line in step with the server's space-separated move
    /// list: the moves both share are kept, the rest are played anew with
    /// `play` (the move and the position after it, or why it is illegal).
    /// Returns how many moves are new. On error the line is unchanged.
    pub fn sync(
        &mut self,
        moves: &str,
        play: impl Fn(&P, &str) -> Result<(M, P), String>,
    ) -> Result<usize, RecordError> {
        let texts: Vec<&str> = moves.split_whitespace().collect();
        let common = self
            .texts
            .iter()
            .zip(&texts)
            .take_while(|(a, b)| a.as_str() == **b)
            .count();
        let mut next = Line {
            texts: self.texts[..common].to_vec(),
            moves: self.moves[..common].to_vec(),
            positions: self.positions[..=common].to_vec(),
        };
        for (index, text) in texts.iter().enumerate().skip(common) {
            let (m, after) =
                play(next.position(), text).map_err(|reason| RecordError::IllegalMove {
                    index,
                    text: text.chars().take(16).collect(),
                    reason,
                })?;
            next.texts.push((*text).to_owned());
            next.moves.push(m);
            next.positions.push(after);
        }
        *self = next;
        Ok(texts.len() - common)
    }

    /// The current position.
    pub fn position(&self) -> &P {
        &self.positions[self.positions.len() - 1]
    }

    /// The position before the first move.
    pub fn initial(&self) -> &P {
        &self.positions[0]
    }

    /// The moves as the server wrote them.
    pub fn texts(&self) -> &[String] {
        &self.texts
    }

    pub fn moves(&self) -> &[M] {
        &self.moves
    }

    /// Every position, the current one last.
    pub fn positions(&self) -> &[P] {
        &self.positions
    }

    /// Each move with the position it was played from.
    pub fn played(&self) -> impl Iterator<Item = (M, &P)> {
        self.moves.iter().copied().zip(&self.positions)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A toy rule: a move is a number, the position the running sum; a
    /// negative number is illegal.
    fn play(pos: &i32, text: &str) -> Result<(i32, i32), String> {
        let m: i32 = text.parse().map_err(|_| "not a number".to_owned())?;
        if m < 0 {
            return Err("negative".into());
        }
        Ok((m, pos + m))
    }

    #[test]
    fn keeps_what_is_shared_and_plays_the_rest() {
        let mut line: Line<i32, i32> = Line::new(0);
        assert_eq!(line.sync("1 2", play).unwrap(), 2);
        assert_eq!(*line.position(), 3);
        assert_eq!(line.sync("1 2 3", play).unwrap(), 1);
        assert_eq!(line.positions(), &[0, 1, 3, 6]);
        // A takeback: the list shrank and changed.
        assert_eq!(line.sync("1 5", play).unwrap(), 1);
        assert_eq!(line.positions(), &[0, 1, 6]);
        assert_eq!(line.texts(), &["1".to_owned(), "5".to_owned()]);
        assert_eq!(line.sync("", play).unwrap(), 0);
        assert_eq!(*line.position(), 0);
    }

    #[test]
    fn an_illegal_move_changes_nothing() {
        let mut line: Line<i32, i32> = Line::new(0);
        line.sync("4", play).unwrap();
        let err = line.sync("4 1 -2", play).unwrap_err();
        assert!(
            matches!(&err, RecordError::IllegalMove { index: 2, text, .. } if text == "-2"),
            "{err:?}"
        );
        assert_eq!(line.positions(), &[0, 4]);
        assert_eq!(line.moves(), &[4]);
    }
}
