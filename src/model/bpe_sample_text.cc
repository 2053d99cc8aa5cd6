// The text make-model's tokenizer learns its first merges from. Original
// prose written for Tessera (no external source): everyday English with
// some numbers, punctuation, code and a little non-ASCII, so the learned
// merges cover common words, spaces before words and a few multi-byte
// characters.
#include "model/synthetic_tokenizer.h"

namespace tessera::model {

std::string_view BpeSampleText() {
  return R"TEXT(The morning was cold, and the little town by the river was still asleep. A baker opened his shop at five o'clock, as he did every day, and the smell of fresh bread drifted over the square. Two cats watched him from the wall. They knew that he would come out soon with a bowl of milk, because he always did.

"Good morning," he said to the cats. "You are early again. Are you hungry?"

The cats did not answer, of course, but they jumped down from the wall and followed him to the door. When the sun came up over the hills, the first people came to buy their bread. There was a teacher who wanted two loaves for her class, a doctor on his way to the hospital, and a girl with a red bicycle who asked for the biggest cake in the shop.

"It is my brother's birthday," she explained. "He is seven years old today, and he loves chocolate more than anything in the world."

The baker smiled and put the cake in a box. He had made it the night before, and it was the best one he had made all year. The girl paid with a handful of coins, counted them twice, and carried the box home very slowly, so that nothing would happen to it on the way.

In the afternoon the weather changed. Dark clouds came in from the sea and the wind began to blow through the streets. People closed their windows and hurried home. The river grew wide and fast, and the old bridge made strange sounds when the water pushed against it. Nobody was afraid, though; the bridge had stood there for more than three hundred years, and it would stand for three hundred more.

When the storm was over, the children ran outside to play in the puddles. Their parents called them back for dinner, but they did not want to go. The sky was clean and bright, and the first stars were coming out one by one. It had been a long day, and a good one.

A computer is a machine that follows instructions. The instructions are called a program, and the people who write them are called programmers. A program can add numbers, sort a list of names, draw a picture, or answer a question. Modern language models read text as a sequence of tokens: small pieces of words, each with a number. The model predicts the next token, then the next one, and so on, until it reaches the end of the answer.

Here is a small example in Python:

def add(a, b):
    return a + b

for i in range(10):
    print(i, add(i, 2 * i))

And the same idea in C++:

int Add(int a, int b) { return a + b; }

The numbers 0, 1, 2, 3, 4, 5, 6, 7, 8 and 9 appear everywhere: 2024, 3.14159, 100%, $42.50, 1,000,000 and 12:30 are all written with them. Dates like 2023-05-17 and versions like v1.2.3 are common in technical text.

Some words come from other languages: café, naïve, résumé, jalapeño and façade. People write "über" in German, "日本語" in Japanese, and "привет" in Russian. Emoji such as 🙂 and 🚀 are text too, each made of several bytes.

Questions and answers are the heart of a conversation. What is the capital of France? The capital of France is Paris. How many legs does a spider have? A spider has eight legs. Why is the sky blue? Because the air scatters blue light more than red light. Thank you for your help! You are welcome; I am happy to help.
)TEXT";
}

}  // namespace tessera::model
