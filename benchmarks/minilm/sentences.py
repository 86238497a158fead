"""English sentences for the MiniLM benchmark: one set to calibrate on, a disjoint set to evaluate on.

Written for this benchmark (no dataset download). They cover many topics and lengths, from a few words
to a long paragraph, so that quantization error shows on short and long inputs alike. Calibration
sentences feed static quantization and any accuracy-guarded search; evaluation sentences are held out
and only ever used to score the finished models against the PyTorch reference.
"""

CALIBRATION = [
    "The train to Lyon leaves at seven.",
    "Please remember to water the tomatoes while I am away.",
    "Our quarterly revenue grew by twelve percent, mostly thanks to subscriptions in Asia.",
    "A quick brown fox jumps over the lazy dog.",
    "She tuned the violin before the concert began.",
    "The committee postponed its decision until the budget figures are final.",
    "Mitochondria convert nutrients into the energy that cells use to do their work.",
    "I can't find my keys anywhere.",
    "The bridge was closed for repairs after the storm damaged its supports.",
    "He learned to bake sourdough bread during the long winter.",
    "Solar panels on the school roof now cover most of its electricity needs.",
    "Could you send me the slides from this morning's meeting?",
    "The museum's new wing displays ceramics from the Ming dynasty.",
    "Rain is expected across the north of the country on Thursday.",
    "After three failed attempts, the climbers finally reached the summit at dawn.",
    "This function returns an empty list when the input file has no records.",
    "The referee showed a red card in the final minute of the match.",
    "Birds migrate south as the days grow shorter and food becomes scarce.",
    "My grandmother still writes letters by hand every Sunday.",
    "The library extended its opening hours during the exam period.",
    "Patients should not eat or drink for eight hours before the procedure.",
    "The startup raised seed funding to build software for small farms.",
    "Wind turbines along the coast produced a record amount of power last month.",
    "He apologized for the delay and promised to deliver the report tomorrow.",
    "The recipe calls for two cups of flour, a pinch of salt and three eggs.",
    "Historians disagree about the causes of the empire's sudden collapse.",
    "The database migration will run overnight so users are not affected.",
    "A stray cat has been sleeping on our porch for a week.",
    "Volcanic ash grounded flights across much of Europe for several days.",
    "She switched careers at forty and became a nurse.",
    "The orchestra rehearsed the symphony for weeks before its premiere in the old opera house, "
    "and the conductor insisted that every section play the slow movement from memory.",
    "Many people find it easier to learn a language by speaking it every day rather than by "
    "memorizing grammar tables, although both approaches have their place.",
    "The city council voted to turn the abandoned rail line into a park with walking and cycling paths.",
    "Keep the medicine in a cool, dry place, out of reach of children.",
    "Engineers traced the outage to a faulty configuration change pushed late on Friday.",
    "The novel follows three generations of a fishing family on a small island.",
    "Coffee prices rose sharply after a frost damaged crops in Brazil.",
    "Do not forget to back up your files before installing the update.",
    "The telescope captured images of a galaxy more than ten billion light years away.",
    "Children in the village walk two hours each way to reach the nearest school.",
]

EVALUATION = [
    "The meeting has been moved to Tuesday afternoon.",
    "He ordered a bowl of noodle soup and a glass of green tea.",
    "The central bank raised interest rates for the third time this year.",
    "Our flight was delayed because of thick fog at the airport.",
    "The doctor recommended more sleep and less coffee.",
    "A new species of frog was discovered in the rainforests of Ecuador.",
    "Turn left at the bakery and the post office will be on your right.",
    "The software update fixed a bug that drained the battery overnight.",
    "She won the chess tournament without losing a single game.",
    "Heavy snow closed the mountain pass for most of the week.",
    "The children built a sandcastle with towers and a moat.",
    "Electric cars accounted for a fifth of new vehicle sales in the region.",
    "I prefer reading paper books to reading on a screen.",
    "The judge dismissed the case for lack of evidence.",
    "Fresh basil makes a big difference in this tomato sauce.",
    "The marathon route passes through five neighborhoods and crosses the river twice.",
    "Scientists measured the thickness of the ice sheet using radar from aircraft.",
    "My laptop fan gets very loud when I compile large projects.",
    "The hotel offers free breakfast and a shuttle to the beach.",
    "Her first album sold more than a million copies.",
    "The factory will switch to renewable energy by the end of the decade.",
    "Please fill in the form and return it before Friday.",
    "Whales communicate over long distances using low-frequency sounds.",
    "The new policy allows employees to work from home two days a week.",
    "He fixed the leaking tap with a wrench and some tape.",
    "The ancient city was buried under volcanic ash for centuries.",
    "Prices in the housing market have cooled since the spring.",
    "The team shipped the feature a week ahead of schedule.",
    "Wolves were reintroduced to the park and the deer population changed its habits.",
    "Drink plenty of water when you exercise in hot weather.",
    "The museum is closed on Mondays.",
    "A power cut left thousands of homes without heating during the cold snap.",
    "The painter used only three colors to create the portrait.",
    "Students must submit their essays through the online portal.",
    "The river flooded the lower part of the town after days of heavy rain.",
    "He has been learning to play the guitar for six months.",
    "The satellite will map the ocean floor in unprecedented detail.",
    "Our neighbors adopted a puppy from the animal shelter.",
    "The company recalled thousands of toasters because of a wiring fault.",
    "Good documentation saves hours of debugging later.",
    "The farmers' market sells honey, cheese and seasonal vegetables every Saturday.",
    "A sudden gust of wind blew the umbrella inside out.",
    "The government announced new funding for rural hospitals.",
    "Astronauts on the space station grew lettuce in a small greenhouse.",
    "I will call you back after lunch.",
    "The striker scored twice in the second half to win the game.",
    "Bees play a crucial role in pollinating many of the crops we eat.",
    "The bakery on the corner sells out of croissants by nine.",
    "Researchers found that short walks after meals help control blood sugar.",
    "The old lighthouse has been turned into a small museum about shipwrecks.",
    "Traffic was backed up for miles after a truck overturned on the highway.",
    "This password is too short; use at least twelve characters.",
    "The play received excellent reviews but closed after only a month.",
    "He spent the summer volunteering at a wildlife rescue center.",
    "The recipe works just as well with almond milk instead of cow's milk.",
    "Earthquakes are common in this region because two tectonic plates meet here.",
    "The professor explained the theorem with a simple drawing on the board.",
    "The airline lost my suitcase on the way to the conference.",
    "A good night's sleep improves memory and concentration.",
    "The council plans to plant ten thousand trees along the city's main roads.",
    "The hikers followed the ridge trail until the clouds came down and they had to turn back, "
    "reaching the hut just before dark, wet and tired but glad they had made the right call.",
    "When the printing press spread across Europe in the fifteenth century, books became cheaper, "
    "literacy rose, and ideas that had once circulated among a few scholars reached a far wider public.",
    "The report recommends that the agency publish its data in open formats, review its procurement "
    "rules, and train staff to handle requests for information within the legal deadline.",
    "To reset the router, hold the small button on the back for ten seconds, wait for the lights "
    "to blink, and then reconnect your devices using the password printed on the label.",
    "The documentary follows a team of divers who map underwater caves in Mexico, showing both the "
    "beauty of the flooded passages and the careful planning that keeps the divers alive.",
    "Although the vaccine trial was small, the early results were encouraging enough for regulators "
    "to approve a larger study involving several thousand volunteers across four countries.",
    "Yes.",
    "Thanks a lot!",
    "Where is the nearest train station?",
    "What time does the pharmacy open on Sundays?",
    "The cat knocked a glass of water off the table.",
    "Inflation eased slightly in October, but food and energy remain expensive.",
]


def _check() -> None:
    overlap = set(CALIBRATION) & set(EVALUATION)
    if overlap:
        raise ValueError(f"calibration and evaluation sentences overlap: {sorted(overlap)}")
    for name, sentences in (("CALIBRATION", CALIBRATION), ("EVALUATION", EVALUATION)):
        if len(set(sentences)) != len(sentences):
            raise ValueError(f"{name} holds duplicate sentences")


_check()
